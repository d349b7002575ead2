"""Small shared helpers: atomic writes and provenance."""
from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator


MARKER = ".unbag-output"  # in every folder unbag writes whole: which command wrote it


def umask() -> int:
    """The process's umask (os has no getter: set and restore it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def mark(folder: Path, kind: str, files: "list[str] | tuple[str, ...]") -> None:
    """Record in `folder` that `kind` wrote it, and which of its entries are unbag's."""
    atomic_write(folder / MARKER, json.dumps({"kind": kind, "files": sorted(files)}) + "\n")


def _marker(folder: Path) -> dict | None:
    try:
        mark = json.loads((folder / MARKER).read_text())
        return mark if isinstance(mark, dict) else None
    except (OSError, ValueError):
        return None


def check_out(out: str | os.PathLike, kind: str, overwrite: bool = False, known: tuple[str, ...] = ()) -> Path:
    """Refuse an output folder unbag must not replace, before any work: a file, a folder holding
    files unbag did not write (or that another kind of command wrote), or one it cannot write.
    An empty folder, or one the same kind of command wrote, is replaced; `overwrite` allows any folder.
    `known`: the names this kind wrote before folders carried a marker (an older unbag's output, whose
    folder holds nothing else, is taken as its own)."""
    from .errors import UnbagError

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UnbagError(f"{out}: is a file; --out names the folder `{kind}` writes")
    if out.is_dir() and not overwrite:
        made = _marker(out) or {"kind": kind, "files": known}
        foreign = sorted(p.name for p in out.iterdir() if p.name not in {MARKER, *made.get("files", ())})
        if foreign:
            shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
            raise UnbagError(f"{out}: holds files unbag did not write ({shown}); choose another --out, or "
                             "pass --overwrite to replace the folder")
        if made and made.get("kind") != kind:
            raise UnbagError(f"{out}: written by `{made.get('kind')}`, not by `{kind}`; choose another --out, "
                             "or pass --overwrite to replace it")
    parent = out.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise UnbagError(f"{out}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK) or (out.is_dir() and not os.access(out, os.W_OK | os.X_OK)):
        raise UnbagError(f"{out}: not writable")
    return out


@contextlib.contextmanager
def atomic_dir(out: str | os.PathLike, kind: str, overwrite: bool = False,
               known: tuple[str, ...] = ()) -> Iterator[Path]:
    """Yield a temporary sibling directory that replaces `out` only if the block succeeds; `out`
    is checked first (`check_out`) and marked as written by `kind`."""
    out = check_out(out, kind, overwrite, known)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        os.chmod(tmp, 0o777 & ~umask())  # mkdtemp makes it 0700 whatever the umask
        yield tmp
        mark(tmp, kind, [p.name for p in tmp.iterdir()])
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            out.rename(old)
            tmp.rename(out)
            shutil.rmtree(old)
        else:
            tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def atomic_write(path: str | os.PathLike, data: str | bytes) -> Path:
    """Write a file via a temporary sibling and rename, so readers never see half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~umask())  # mkstemp makes it 0600 whatever the umask
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def at_least(name: str, value: object, low: int = 1) -> None:
    """Refuse a count that is not a whole number >= low, naming its flag."""
    from .errors import UnbagError
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise UnbagError(f"--{name.replace('_', '-')} {value!r}: must be a whole number >= {low}")


def whole_numbers(obj: object, least: dict[str, int]) -> None:
    """Refuse a config whose counts are below their least values (`least`: field -> minimum)."""
    for name, low in least.items():
        at_least(name, getattr(obj, name), low)


def read_safetensors(path: str | os.PathLike, device: str = "cpu") -> dict:
    """The tensors of a safetensors file, with an error naming the file when it is missing, cut
    short or not a safetensors file."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from .errors import UnbagError
    try:
        return load_file(str(path), device=device)
    except FileNotFoundError:
        raise UnbagError(f"{path}: weights file not found") from None
    except (SafetensorError, OSError) as e:
        raise UnbagError(f"{path}: not a readable safetensors file ({e}); it may be truncated or "
                         "overwritten: restore or rebuild it") from None


def write_json(path: str | os.PathLike, obj: object) -> Path:
    return atomic_write(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


def git_commit() -> str | None:
    """The commit of the unbag checkout, with '+dirty' when it has uncommitted changes."""
    root = Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def versions() -> dict:
    """Versions of what produced a result."""
    import numpy
    import open_clip
    import torch

    from . import __version__

    return {"unbag": __version__, "torch": torch.__version__, "open_clip": open_clip.__version__,
            "numpy": numpy.__version__, "python": platform.python_version(),
            "git_commit": git_commit()}


def read_json(path: str | os.PathLike, missing: str = "file not found"):
    """A JSON file's content; errors name the file (with `missing` when it is absent) or the line."""
    from .errors import UnbagError
    path = Path(path)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise UnbagError(f"{path}: {missing}") from None
    except json.JSONDecodeError as e:
        raise UnbagError(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from None
