"""Chapter 00's environment check: installed versions against the tested set, and a font that
shows the course's Chinese text, in the browser and in figures, or what to install."""

from attncourse.chapters import ch00_how_to_use as ch00

BASE = [("torch", True), ("numpy", True), ("voila", False)]
FONTS = {"browser": ["Noto Sans CJK SC"], "figures": ["Noto Sans CJK JP"]}


def test_versions_as_tested_newer_older_and_missing(monkeypatch):
    import importlib.metadata as metadata

    installed = {"torch": "2.13.0+cpu", "numpy": "2.5.0", "voila": "0.5.13"}

    def version(name):
        if name not in installed:
            raise metadata.PackageNotFoundError(name)
        return installed[name]

    monkeypatch.setattr(metadata, "version", version)
    tested = {"torch": "2.13.0", "numpy": "2.4.6", "voila": "0.5.13"}
    report = {
        line.split()[0]: (mark, line) for mark, line in ch00.environment_report(tested, FONTS, BASE)
    }
    assert report["torch"] == ("✓", "torch 2.13.0+cpu (tested: 2.13.0)")
    assert report["numpy"][0] == "~" and "newer than the tested 2.4.6" in report["numpy"][1]
    assert "voila" not in report  # an extra's package as tested is counted, not listed
    assert ("✓", "1 package of the extras installed here, as tested") in report.values()

    installed["numpy"] = "2.3.0"
    del installed["torch"]
    marks = {line.split()[0].rstrip(":"): (m, line) for m, line in
             ch00.environment_report(tested, FONTS, BASE)}  # fmt: skip
    assert marks["numpy"][0] == "✗" and "pip install 'numpy>=2.4.6'" in marks["numpy"][1]
    assert marks["torch"] == ("✗", "torch: not installed: pip install torch==2.13.0")


def test_no_chinese_font_says_what_to_install():
    report = ch00.environment_report({}, {"browser": [], "figures": []}, [])
    problems = [line for mark, line in report if mark == "✗"]
    assert len(problems) == 2
    assert all("sudo apt-get install fonts-noto-cjk" in line for line in problems)
    assert "browser" in problems[0] and "matplotlib" in problems[1]
    fine = ch00.environment_report({}, FONTS, [])
    assert not [line for mark, line in fine if mark == "✗"]
    assert ("✓", "Chinese text in the browser: Noto Sans CJK SC") in fine


def test_the_font_search_rejects_a_font_without_the_glyphs(monkeypatch, tmp_path):
    """DejaVu Sans (matplotlib's own) has no Chinese: it is never reported as one."""
    from matplotlib import font_manager

    dejavu = [f for f in font_manager.fontManager.ttflist if f.name == "DejaVu Sans"]
    monkeypatch.setattr(font_manager.fontManager, "ttflist", dejavu)
    assert dejavu and ch00._matplotlib_cjk_fonts() == []


def test_check_environment_on_this_machine_prints_a_verdict():
    lines = []
    ok = ch00.check_environment(echo=lines.append)
    assert lines[0].startswith("Environment check")
    assert any("torch" in line for line in lines)
    assert ("all set" in lines[-1]) == ok
    assert ch00.tested_versions()["torch"] == "2.13.0"
