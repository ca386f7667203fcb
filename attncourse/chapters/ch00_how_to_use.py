"""Chapter 00's first widget: softmax at a temperature, drawn as text bars."""

import torch


def temperature_bars(scores, temperature: float = 1.0, width: int = 40) -> str:
    """The chapter-00 widget: softmax(scores / temperature) as rows of text bars, in HTML.

    scores: (S,). Returns one ``<div>`` per key, "key i: ████ 0.123" (Eq. 14.3.20's temperature).
    """
    from ..attention import softmax

    alpha = softmax(torch.as_tensor(scores, dtype=torch.float64), temperature=temperature)  # (S,)
    return "".join(
        f"<div style='font-family:monospace'>key {i}: {'█' * int(width * a)} {a:.3f}</div>"
        for i, a in enumerate(alpha.tolist())
    )


# ------------------------------------------------------------------------ environment check
# Chapter 00's first code cell: ``check_environment()`` says whether this machine has what the
# course was tested with, and whether Chinese text (the source chapters' titles and glossary
# lines) can show, in the browser and in figures, and what to install where it cannot.

CJK_SAMPLE = "注意力"  # "attention": a font that has these has the course's Chinese text
CJK_FONT_PACKAGES = (
    "Debian/Ubuntu: sudo apt-get install fonts-noto-cjk; "
    "Fedora: sudo dnf install google-noto-sans-cjk-fonts"
)  # macOS and Windows come with one
_CJK_NAMES = ("cjk", "han sans", "han serif", "wenquanyi", "droid sans fallback", "heiti",
              "simhei", "simsun", "yahei", "pingfang", "hiragino", "ukai", "uming", "noto sans sc",
              "noto sans tc", "noto serif sc", "source han")  # fmt: skip


def tested_versions() -> dict[str, str]:
    """{distribution name (lower case): the exact version the course is tested with}, from
    ``constraints.txt`` (in a clone) or its copy in the installed package."""
    from pathlib import Path

    package = Path(__file__).resolve().parents[1]
    for path in (package / "constraints.txt", package.parent / "constraints.txt"):
        if path.is_file():
            pins = {}
            for line in path.read_text().splitlines():
                name, sep, version = line.strip().partition("==")
                if sep and not name.startswith("#"):
                    pins[_normal(name)] = version
            return pins
    return {}


def _normal(name: str) -> str:
    import re

    return re.sub(r"[-_.]+", "-", name).lower()


def _release(version: str) -> tuple:
    """``2.13.0+cpu`` -> (2, 13, 0): the numeric release, for comparing."""
    import re

    parts = re.match(r"\d+(\.\d+)*", version)
    return tuple(int(p) for p in parts.group(0).split(".")) if parts else ()


def _requirements() -> list[tuple[str, bool]]:
    """The course's own dependencies, (name, in the base): the base's, and those of the extras
    that are installed."""
    import importlib.metadata as metadata
    import re

    try:
        requires = metadata.requires("attncourse") or []
    except metadata.PackageNotFoundError:
        return []
    names = {}
    for requirement in requires:
        name = _normal(re.match(r"[A-Za-z0-9_.\-]+", requirement).group(0))
        if name == "attncourse" or name in names:
            continue
        base = "extra ==" not in requirement
        if not base:  # an extra's package: only if it is installed
            try:
                metadata.version(name)
            except metadata.PackageNotFoundError:
                continue
        names[name] = base
    return list(names.items())


def cjk_fonts() -> dict[str, list[str]]:
    """Fonts that can show Chinese: {"browser": fontconfig's families (Linux; None where there is
    no fontconfig), "figures": matplotlib's}."""
    import shutil
    import subprocess

    browser = None
    if shutil.which("fc-list"):
        done = subprocess.run(
            ["fc-list", ":lang=zh", "family"], capture_output=True, text=True, timeout=30
        )
        browser = sorted({line.split(",")[0].strip() for line in done.stdout.splitlines() if line})
    return {"browser": browser, "figures": _matplotlib_cjk_fonts()}


def _matplotlib_cjk_fonts() -> list[str]:
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    fonts = font_manager.fontManager.ttflist
    # likely names first; then every font, on a machine with few of them (a fresh one)
    likely = [f for f in fonts if any(n in f.name.lower() for n in _CJK_NAMES)]
    candidates = likely or (fonts if len(fonts) <= 200 else [])
    found = set()
    for font in candidates:
        try:
            charmap = FT2Font(font.fname).get_charmap()
        except Exception:  # an unreadable font file: not one we can use
            continue
        glyphs = {charmap.get(ord(c)) for c in CJK_SAMPLE}
        if None not in glyphs and len(glyphs) == len(CJK_SAMPLE):  # not one stand-in glyph
            found.add(font.name)
    return sorted(found)


def environment_report(
    tested: dict | None = None, fonts: dict | None = None, requirements: list | None = None
) -> list[tuple]:
    """What ``check_environment`` prints: (mark, line) pairs, mark "✓" as tested, "~" newer than
    tested (should work), "✗" something to fix (the line says how). ``tested``, ``fonts`` and
    ``requirements`` default to this machine's (``tested_versions``, ``cjk_fonts``,
    ``_requirements``)."""
    import importlib.metadata as metadata
    import platform

    tested = tested_versions() if tested is None else tested
    requirements = _requirements() if requirements is None else requirements
    report = []
    python = platform.python_version()
    mark = "✓" if _release(python)[:2] == (3, 11) else "~"
    report.append((mark, f"Python {python} (tested: 3.11)"))
    as_tested = 0  # packages of the extras that are as tested: counted, not listed
    for name, base in requirements:
        want = tested.get(name)
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            report.append(("✗", f"{name}: not installed: pip install {name}=={want or ''}"))
            continue
        if want is None or _release(have) == _release(want):
            if base:
                report.append(("✓", f"{name} {have}" + (f" (tested: {want})" if want else "")))
            else:
                as_tested += 1
        elif _release(have) > _release(want):
            report.append(("~", f"{name} {have}: newer than the tested {want}; it should work"))
        else:
            report.append(
                ("✗", f"{name} {have}: older than the tested {want}: pip install '{name}>={want}'")
            )
    if as_tested:
        packages = f"{as_tested} package" + ("s" if as_tested > 1 else "")
        report.append(("✓", f"{packages} of the extras installed here, as tested"))
    fonts = cjk_fonts() if fonts is None else fonts
    browser, figures = fonts.get("browser"), fonts.get("figures") or []
    if browser == []:
        report.append(
            (
                "✗",
                "no Chinese font for the browser: the Chinese titles and glossary lines show as "
                f"empty boxes. Install one ({CJK_FONT_PACKAGES}), then restart the browser",
            )
        )
    elif browser:
        report.append(("✓", f"Chinese text in the browser: {browser[0]}"))
    if figures:
        report.append(("✓", f"Chinese text in figures: {figures[0]}"))
    else:
        report.append(
            (
                "✗",
                "no Chinese font for matplotlib: Chinese labels in figures show as boxes. Install "
                f"one ({CJK_FONT_PACKAGES}), then delete ~/.cache/matplotlib and restart the "
                "kernel",
            )
        )
    return report


def check_environment(echo=print) -> bool:
    """Chapter 00's environment check: print the report; True when nothing needs fixing."""
    report = environment_report()
    echo("Environment check (✓ as tested · ~ newer than tested · ✗ to fix):")
    for mark, line in report:
        echo(f"  {mark} {line}")
    problems = sum(mark == "✗" for mark, _ in report)
    echo(
        "  all set: the course runs as tested here"
        if not problems
        else f"  {problems} thing{'s' if problems > 1 else ''} to fix above; the course runs "
        "meanwhile, only what each line names is missing"
    )
    return not problems
