"""Small shared helpers: atomic writes, provenance, and `collect`, how every registry finds its entries."""
from __future__ import annotations

import contextlib
import contextvars
import importlib
import json
import os
import pkgutil
import platform
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Iterator

MARKER = ".unbag-output"  # in every folder unbag writes whole: which command wrote it, and every entry


def umask() -> int:
    """The process's umask (os has no getter: set and restore it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def walk_files(root: Path) -> list[Path]:
    """Every file under `root`, following links to folders, each real folder once (a link that
    loops back is not followed again), sorted."""
    files, seen = [], set()
    for d, dirs, names in os.walk(root, followlinks=True):
        st = os.stat(d)
        if (st.st_dev, st.st_ino) in seen:
            dirs[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        files += [Path(d) / n for n in names if os.path.isfile(os.path.join(d, n))]
    return sorted(files)


def tree(folder: Path) -> list[str]:
    """Every entry under `folder`, files and folders, as relative POSIX paths (symlinks are listed,
    not followed)."""
    out = []
    for d, dirs, files in os.walk(folder):
        rel = Path(d).relative_to(folder)
        out += [(rel / n).as_posix() for n in dirs + files]
    return sorted(out)


def mark(folder: Path, kind: str, files: "list[str] | tuple[str, ...]", grows: bool = False,
         recipe: dict | None = None) -> None:
    """Record in `folder` that `kind` wrote it, its top-level entries `files` and, under "tree",
    every entry below them: what a later run may replace without asking. `grows`: a folder unbag
    adds to as it goes (a plan's), whose top-level names alone are recorded. `recipe`: what made
    it, for `up_to_date`."""
    if grows:
        record = {"kind": kind, "files": sorted(files), "grows": True}
    else:
        record = {"kind": kind, "files": sorted(files),
                  "tree": [e for e in tree(folder) if e.split("/")[0] in set(files) and e != MARKER]}
    if recipe is not None:
        record["recipe"] = recipe
    atomic_write(folder / MARKER, json.dumps(record) + "\n")


def up_to_date(out: str | os.PathLike, kind: str, recipe: dict) -> bool:
    """Whether `out` is a folder `kind` wrote whole from this `recipe`, holding every entry it
    wrote and nothing else (what it holds is not read again: an edited file goes unnoticed)."""
    out = Path(os.path.expanduser(out))
    made = _marker(out) if out.is_dir() else None
    if not made or made.get("kind") != kind or made.get("recipe") != recipe or "tree" not in made:
        return False
    return all((out / e).exists() for e in made["files"] + made["tree"]) and not _foreign(out, made)


def _marker(folder: Path) -> dict | None:
    try:
        mark = json.loads((folder / MARKER).read_text())
        return mark if isinstance(mark, dict) else None
    except (OSError, ValueError, RecursionError):
        return None


def _foreign(out: Path, made: dict) -> list[str]:
    """The entries of `out` its marker does not list: a user's files, at any depth. An older
    marker lists only top-level names: below them, what is newer than the marker is foreign."""
    if "tree" in made:
        own = set(made["tree"]) | {MARKER}
        return [e for e in tree(out) if e not in own]
    top = set(made.get("files", ())) | {MARKER}
    foreign = sorted(p.name for p in out.iterdir() if p.name not in top)
    if made.get("grows"):
        return foreign
    try:
        since = (out / MARKER).stat().st_mtime
    except OSError:
        return foreign
    for name in sorted(top - {MARKER}):
        sub = out / name
        if sub.is_dir() and not sub.is_symlink():
            foreign += [f"{name}/{e}" for e in tree(sub) if (sub / e).lstat().st_mtime > since + 1]
    return foreign


def _inside(path: Path, folder: Path) -> bool:
    """Whether `path` is `folder` or lies under it (both resolved)."""
    return path == folder or folder in path.parents


def guard_inputs(out: Path, inputs: "tuple | list", what: str = "--out", file: bool = False) -> None:
    """Refuse an output that would replace or hold one of the command's inputs, or the folder the
    command runs in (whatever --overwrite says: replacing it would delete what the command reads);
    a `file` output also may not lie inside an input folder (a benchmark's own)."""
    from .errors import UnbagError
    target = Path(os.path.abspath(os.path.expanduser(out)))
    real = target.resolve()
    for p in inputs:
        src = Path(p).expanduser().resolve()
        if _inside(src, real) or _inside(src, target) or (file and (_inside(real, src) or _inside(target, src))):
            raise UnbagError(f"{out}: {what} {'lies in or is' if file else 'holds'} {p}, an input of this command; "
                             f"choose another {what}")
    if real == Path(real.anchor):
        raise UnbagError(f"{out}: {what} is the root folder; name a new folder for unbag to write")
    if _inside(Path.cwd().resolve(), real):
        raise UnbagError(f"{out}: {what} is a folder this command runs in (or one above it); name a new folder "
                         "for unbag to write")


def check_out(out: str | os.PathLike, kind: str, overwrite: bool = False, known: tuple[str, ...] = (),
              inputs: "tuple | list" = (), remedy: str | None = None) -> Path:
    """Refuse an output folder unbag must not replace, before any work: a file, a folder holding
    files unbag did not write at any depth (or that another kind of command wrote), one it cannot
    write, or one that holds the command's `inputs` (even with `overwrite`). An empty folder, or
    one the same kind of command wrote, is replaced; `overwrite` allows any other folder.
    `known`: the names this kind wrote before folders carried a marker (an older unbag's output, whose
    folder holds nothing else, is taken as its own). `remedy`: what a refusal tells the user to do
    instead (by default: choose another --out, or pass --overwrite)."""
    from .errors import UnbagError

    out = Path(os.path.expanduser(out))
    guard_inputs(out, inputs)
    if out.is_symlink():
        raise UnbagError(f"{out}: is a link; --out names a real folder for `{kind}` to write (unbag replaces it "
                         "whole and would replace the link, not what it points to)")
    check_name(out)
    if out.exists() and not out.is_dir():
        raise UnbagError(f"{out}: is a file; --out names the folder `{kind}` writes")
    if out.is_dir() and not overwrite:
        made = _marker(out) or {"kind": kind, "files": known}
        foreign = _foreign(out, made)
        if foreign:
            shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
            raise UnbagError(f"{out}: holds files unbag did not write ({shown}); "
                             + (remedy or "choose another --out, or pass --overwrite to replace the folder"))
        if made and made.get("kind") != kind:
            raise UnbagError(f"{out}: written by `{made.get('kind')}`, not by `{kind}`; "
                             + (remedy or "choose another --out, or pass --overwrite to replace it"))
    probe_writable(out)
    if out.is_dir() and not os.access(out, os.W_OK | os.X_OK):
        raise UnbagError(f"{out}: not writable")
    return out


def png_marked(image, kind: str) -> bytes:
    """A PIL image as PNG bytes carrying unbag's mark (a 'Software' text chunk naming `kind`), by
    which unbag knows later that it drew the file and may replace it."""
    import io

    from PIL import PngImagePlugin
    info = PngImagePlugin.PngInfo()
    info.add_text("Software", f"unbag {kind}")
    buf = io.BytesIO()
    image.save(buf, format="PNG", pnginfo=info)
    return buf.getvalue()


def drawn_by_unbag(path: Path, kind: str) -> bool:
    """Whether a file is a PNG unbag drew with `png_marked(..., kind)`."""
    from PIL import Image
    try:
        with Image.open(path) as im:
            return im.format == "PNG" and im.info.get("Software") == f"unbag {kind}"
    except (OSError, ValueError, Image.DecompressionBombError):
        return False


def check_name(out: Path) -> None:
    """Refuse a file name longer than its folder allows with unbag's temporary prefix and suffix
    (before the work, not when the result is written)."""
    from .errors import UnbagError
    try:
        limit = os.pathconf(_existing_parent(out), "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        limit = 255
    size = len(os.fsencode(out.name))
    if size + 16 > limit:
        raise UnbagError(f"{out}: file name of {size} bytes is too long here (at most {limit - 16} for unbag's "
                         "temporary copy beside it)")


_removing = 0  # how many blocks are removing temporary files now (a signal waits for them)


@contextlib.contextmanager
def removing() -> Iterator[None]:
    """Mark a block that removes what an interrupted write left (the CLI's SIGTERM handler does not
    raise inside it: it asks again once the block is done)."""
    global _removing
    _removing += 1
    try:
        yield
    finally:
        _removing -= 1


def removing_now() -> bool:
    """Whether a block is removing temporary files (`removing`)."""
    return _removing > 0


def _existing_parent(out: Path) -> Path:
    """The nearest folder above `out` that exists (where unbag will create what is missing)."""
    parent = out.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return parent


PROBE_BYTES = 1 << 16


def probe_writable(out: Path) -> None:
    """Refuse, before any work, an output whose folder unbag cannot write a file into: a file where
    a folder should be, read-only, not permitted, or a full disk (a small file is written, flushed
    to disk and removed, in the nearest existing folder above `out`)."""
    from .errors import UnbagError
    folder = _existing_parent(out)
    if not folder.is_dir():
        raise UnbagError(f"{out}: {folder} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UnbagError(f"{out}: not writable ({folder} does not let this user write)")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".unbag-probe-", dir=folder)
    except OSError as e:
        raise UnbagError(f"{out}: not writable ({e.strerror})") from None
    try:
        os.write(fd, b"\0" * PROBE_BYTES)
        os.fsync(fd)
    except OSError as e:
        raise UnbagError(f"{out}: cannot write there ({e.strerror}); free some space or choose another "
                         "--out") from None
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def check_file_out(out: str | os.PathLike, kind: str, own: "Callable[[Path], bool]", overwrite: bool = False,
                   inputs: "tuple | list" = (), also: "tuple | list" = ()) -> Path:
    """Refuse, before any work, an output file unbag must not replace: a folder, a file unbag did
    not write (`own(path)` says whether it is unbag's; `overwrite` allows it), one of the command's
    `inputs` or a file inside an input folder (never), or a place it cannot write. `also`: the
    files written beside it (eval's X.items.jsonl), checked alike."""
    from .errors import UnbagError
    text = os.fspath(out)
    out = Path(os.path.expanduser(text))
    if not text or text.endswith(("/", os.sep)) or out.is_dir():
        raise UnbagError(f"{text or repr(text)}: is a folder; --out names the file `{kind}` writes")
    for f in (out, *map(Path, also)):
        guard_inputs(f, inputs, file=True)
        check_name(f)
        if f.is_dir():
            raise UnbagError(f"{f}: is a folder, and `{kind}` writes a file there; choose another --out")
        if f.exists() and not overwrite and not own(f):
            raise UnbagError(f"{f}: exists and unbag did not write it; choose another --out, or pass "
                             "--overwrite to replace it")
    probe_writable(out)
    return out


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive lock on a folder while files in it are swapped (other processes of unbag wait)."""
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks; the swap still goes file by file
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def atomic_files(files: "list[tuple[Path, str | bytes | Iterable[bytes] | Callable[[], bytes]]]") -> None:
    """Write several files as one unit: each to a temporary sibling and flushed to disk first (a
    full disk fails here, before anything is replaced), then all renamed into place under one
    lock on their folder, the last one last (so a reader who finds it finds the others). A file's
    data may come as blocks (written as they come: a per-item file is never held whole) or from a
    function called when the files before it are written (a results file that records their hash)."""
    from .errors import UnbagError
    tmps: list[tuple[str, Path]] = []
    try:
        for path, data in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
            tmps.append((tmp, path))
            os.fchmod(fd, 0o666 & ~umask())
            with os.fdopen(fd, "wb") as f:
                data = data() if callable(data) else data
                for block in [data] if isinstance(data, (str, bytes)) else data:
                    f.write(block.encode() if isinstance(block, str) else block)
                f.flush()
                os.fsync(f.fileno())
        with folder_lock(files[-1][0].parent):
            for tmp, path in tmps:
                os.replace(tmp, path)
        tmps = []
    except OSError as e:
        raise UnbagError(f"{files[-1][0]}: cannot write ({e.strerror}); nothing was replaced") from None
    finally:
        with removing():
            for tmp, _ in tmps:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)


@contextlib.contextmanager
def atomic_dir(out: str | os.PathLike, kind: str, overwrite: bool = False,
               known: tuple[str, ...] = (), inputs: "tuple | list" = (), recipe: dict | None = None) -> Iterator[Path]:
    """Yield a temporary sibling directory that replaces `out` only if the block succeeds; `out`
    is checked first (`check_out`) and marked as written by `kind` (from `recipe`, when given)."""
    out = check_out(out, kind, overwrite, known, inputs)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        os.chmod(tmp, 0o777 & ~umask())  # mkdtemp makes it 0700 whatever the umask
        yield tmp
        mark(tmp, kind, [p.name for p in tmp.iterdir()], recipe=recipe)
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            out.rename(old)
            tmp.rename(out)
            shutil.rmtree(old)
        else:
            tmp.rename(out)
    except BaseException:
        with removing():
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
        with removing(), contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def at_least(name: str, value: object, low: int = 1) -> None:
    """Refuse a count that is not a whole number >= low, naming its flag."""
    from .errors import UnbagError
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise UnbagError(f"--{name.replace('_', '-')} {value!r}: must be a whole number >= {low}")


def a_number(name: str, value: object, low: float = 0.0, above: bool = False, below: float | None = None) -> None:
    """Refuse a rate or weight that is not a finite number >= low (> low when `above`; < `below`
    when given), naming its flag: a NaN or negative learning rate trains nothing, silently."""
    import math

    from .errors import UnbagError
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) \
        and (value > low if above else value >= low) and (below is None or value < below)
    if not ok:
        rng = f"{'>' if above else '>='} {low:g}" + (f" and < {below:g}" if below is not None else "")
        raise UnbagError(f"--{name.replace('_', '-')} {value!r}: must be a finite number {rng}")


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

    from .version import __version__

    return {"unbag": __version__, "torch": torch.__version__, "open_clip": open_clip.__version__,
            "numpy": numpy.__version__, "python": platform.python_version(),
            "git_commit": git_commit()}


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list) -> dict:
    keys = [k for k, _ in pairs]
    if len(set(keys)) < len(keys):
        raise _DuplicateKey(next(k for k in keys if keys.count(k) > 1))
    return dict(pairs)


def parse_json(text: str, where: object, whole: bool = True) -> object:
    """JSON text, strictly: a key given twice in one object (where Python keeps the last, silently)
    and nesting deeper than Python can follow are errors naming `where` (a file, whose line is
    added when `whole`; or a 'file:line' of JSON Lines)."""
    from .errors import UnbagError
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as e:
        raise UnbagError(f"{where}: key {e.args[0]!r} appears twice in one object (JSON readers disagree on "
                         "which one counts): remove one") from None
    except json.JSONDecodeError as e:
        raise UnbagError(f"{where}:{e.lineno}: not valid JSON ({e.msg})" if whole
                         else f"{where}: not valid JSON ({e.msg})") from None
    except RecursionError:
        raise UnbagError(f"{where}: nested too deeply to read") from None


_READING: contextvars.ContextVar[list | None] = contextvars.ContextVar("unbag_reading", default=None)


@contextlib.contextmanager
def reading() -> Iterator[list[Path]]:
    """Collect the paths of the files read inside (`opened`): what a benchmark's fingerprint covers."""
    got: list[Path] = []
    token = _READING.set(got)
    try:
        yield got
    finally:
        _READING.reset(token)


def opened(path: str | os.PathLike) -> Path:
    """`path`, about to be read: refused unless it is a regular file once links are followed (a
    FIFO or a device would block or never end; a folder is no file), and noted as read inside
    `reading`. A missing path is returned as it is: its reader says what it expected there."""
    from .errors import UnbagError
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return path
    except (OSError, ValueError) as e:
        raise UnbagError(f"{path}: cannot read ({getattr(e, 'strerror', None) or e})") from None
    if stat.S_ISDIR(mode):
        raise UnbagError(f"{path}: is a folder, not a file")
    if not stat.S_ISREG(mode):
        raise UnbagError(f"{path}: not a regular file (a FIFO, socket or device would block or never end); "
                         "unbag reads regular files only")
    got = _READING.get()
    if got is not None:
        got.append(path)
    return path


def read_text(path: str | os.PathLike, missing: str = "file not found") -> str:
    """A text file's content; a missing file, a folder, a FIFO or a binary file is an error naming it."""
    from .errors import UnbagError
    path = opened(path)
    try:
        return path.read_text(encoding="utf-8-sig")  # a byte-order mark some editors write is not content
    except FileNotFoundError:
        raise UnbagError(f"{path}: {missing}") from None
    except IsADirectoryError:
        raise UnbagError(f"{path}: is a folder, not a file") from None
    except UnicodeDecodeError as e:
        raise UnbagError(f"{path}: not a text file (byte {e.start} is not UTF-8)") from None
    except OSError as e:
        raise UnbagError(f"{path}: cannot read ({e.strerror})") from None


def read_json(path: str | os.PathLike, missing: str = "file not found"):
    """A JSON file's content, strictly (`parse_json`); errors name the file (with `missing` when it
    is absent) or the line."""
    return parse_json(read_text(path, missing), Path(path))


def read_toml(path: str | os.PathLike, missing: str = "file not found") -> dict:
    """A TOML file's content; errors name the file and what is wrong."""
    import sys
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        import tomli as tomllib

    from .errors import UnbagError
    text = read_text(path, missing)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UnbagError(f"{path}: not valid TOML ({e})") from None
    except RecursionError:
        raise UnbagError(f"{path}: nested too deeply to read") from None


def items_hash(data: bytes) -> str:
    """The SHA-256 a results file records of its per-item file."""
    import hashlib
    return hashlib.sha256(data).hexdigest()


def collect(name: str, table: str) -> dict:
    """Every entry of the module-level dict `table` declared by module `name` or, when it is a
    package, by each of its modules (in name order; the package's __init__ is not read). unbag's one
    way to register a thing (model backend, objective, protocol, head, benchmark, world): declare it
    in the table of the file that implements it; a name declared twice is an error naming both files."""
    mod = importlib.import_module(name)
    mods = [importlib.import_module(f"{name}.{m.name}")
            for m in sorted(pkgutil.iter_modules(mod.__path__), key=lambda m: m.name)] \
        if hasattr(mod, "__path__") else [mod]
    out: dict = {}
    where: dict[str, str] = {}
    for m in mods:
        for key, thing in getattr(m, table, {}).items():
            if key in out:
                raise RuntimeError(f"{table} {key!r} is declared twice: in {where[key]} and {m.__name__}")
            out[key], where[key] = thing, m.__name__
    return out
