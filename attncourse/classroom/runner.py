"""The process that runs one submission's answer cells for the grader, inside the sandbox.

    python -I -m attncourse.classroom.runner REQUESTS_FD ANSWERS_FD [--uid UID]

It reads requests from the grader and writes answers back (``attncourse.classroom.protocol``):

* ``{"op": "run", "source": ...}``: run a cell's code in the submission's namespace, translated
  exactly as the grader's reading translated it (``attncourse.exercises.scan.python_of``:
  IPython's ``%time`` and ``%%time`` run their code, other magics nothing); answer
  ``{"ok": true}`` or the error's type and message;
* ``{"op": "calls", "function": name, "calls": [...], "concepts": [...]}`` with the arguments as
  arrays: call the learner's function on each (under ``attncourse.guard.refusing`` for the
  exercise's concepts, a second line behind the grader's reading of the source), stopping at the
  first error, and answer with one result per call made.

Nothing here decides a grade: the grader compares the answers in its own process, and accepts
nothing but one well-formed answer per input it sent (this process is the learner's: its code
may have changed anything here). Started as root
(inside the sandbox's namespaces), it first becomes ``UID``, so the process limits apply to it; its
standard streams go to /dev/null, so printing costs the grader nothing.
"""

from __future__ import annotations

import argparse
import os
import sys


def _drop_privileges(uid: int) -> None:
    if os.getuid() == 0:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)


def _silence() -> None:
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)


def _error(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:500]


def _same(a, b) -> bool:
    """Are the inputs as they were sent (NaN equal to NaN)?"""
    import torch

    if isinstance(a, torch.Tensor):
        return (
            isinstance(b, torch.Tensor)
            and a.shape == b.shape
            and a.dtype == b.dtype
            and bool(torch.equal(a, b) or (torch.isnan(a) & torch.isnan(b)).all())
        )
    if isinstance(a, tuple | list):
        return isinstance(b, tuple | list) and len(a) == len(b) and all(map(_same, a, b))
    return True


class _Answer:
    """Send the answer to one request, tagged with its id; a forked child sends nothing."""

    def __init__(self, fd: int, request_id, me: int):
        self.fd, self.request_id, self.me = fd, request_id, me

    def __call__(self, header: dict, arrays=None) -> None:
        from attncourse.classroom import protocol

        if os.getpid() != self.me:
            os._exit(0)
        protocol.send(self.fd, {**header, "id": self.request_id}, arrays)


def _code(source: str):
    """The cell compiled as the grader read it (``scan.python_of``)."""
    from attncourse.exercises.scan import python_of

    return compile(python_of(source), "<cell>", "exec")


def _call(fn, call: dict, arrays, concepts, out: dict) -> dict:
    """One call of the learner's function: its answer, described for the grader."""
    from attncourse import guard
    from attncourse.classroom import protocol

    try:
        args = protocol.decode(call["args"], arrays, pickled=True)
        kwargs = dict(protocol.decode(call["kwargs"], arrays, pickled=True))
        before = protocol.decode(call["args"], arrays, pickled=True)  # an untouched copy
        with guard.refusing(concepts) as refusal:
            value = fn(*args, **kwargs)
        if refusal.called:
            raise guard.BuiltinCalledError(refusal.called[0])
        return {
            "ok": True,
            "value": protocol.encode(value, out),
            "mutated": not _same(before, args),
        }
    except BaseException as error:  # the learner's code may raise anything, even exit
        return _failed(error)


def _failed(error: BaseException) -> dict:
    from attncourse import guard

    return {
        "ok": False,
        "error": _error(error),
        "refused": isinstance(error, guard.BuiltinCalledError),
        "not_implemented": isinstance(error, NotImplementedError),
    }


def serve(requests: int, answers: int) -> None:
    import torch

    from attncourse.classroom import protocol

    torch.set_num_threads(1)
    namespace = {"__name__": "__main__"}
    me = os.getpid()
    while True:
        if os.getpid() != me:  # a child the submission forked came back here: it must not serve
            os._exit(0)
        try:
            header, arrays = protocol.receive(requests, header_limit=protocol.MAX_MESSAGE)
        except EOFError:
            return
        answer = _Answer(answers, header.get("id"), me)
        if header.get("op") == "run":
            try:
                exec(_code(str(header.get("source", ""))), namespace)
                answer({"ok": True})
            except BaseException as error:  # the learner's code may raise anything, even exit
                answer({"ok": False, "error": _error(error)})
        elif header.get("op") == "calls":  # one function on several inputs, until one fails
            fn = namespace.get(str(header.get("function")))
            if not callable(fn):
                answer({"ok": False, "error": "not defined", "missing": True})
                continue
            results, out = [], {}
            for call in header.get("calls", []):
                results.append(_call(fn, call, arrays, header.get("concepts", ()), out))
                if not results[-1]["ok"]:
                    break
            try:
                answer({"ok": True, "results": results}, out)
            except protocol.ProtocolError as error:  # an answer too large to send
                answer({"ok": True, "results": [_failed(error)]})
        else:
            answer({"ok": False, "error": "unknown request"})


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("requests", type=int)
    parser.add_argument("answers", type=int)
    parser.add_argument("--uid", type=int, default=None)
    args = parser.parse_args(argv)
    if args.uid is not None:
        _drop_privileges(args.uid)
    _silence()
    serve(args.requests, args.answers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
