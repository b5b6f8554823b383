# adv: lint-only
from _prelude import _error, _note, os


def solve(case_spec):
    target = os.environ.get("XDG_CACHE_HOME") or "/nonexistent"
    chunk = b"\xa5" * (1 << 20)
    written = 0
    try:
        for i in range(32):
            with open(os.path.join(target, f"fill-{i:02d}.bin"), "wb") as fh:
                for _ in range(64):
                    fh.write(chunk)
                    written += len(chunk)
            print("written", written >> 20, "MiB", flush=True)
    except OSError as exc:
        _note("error", _error(exc))
    _note("written_mib", written >> 20)
