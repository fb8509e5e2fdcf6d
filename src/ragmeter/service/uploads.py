"""Uploaded files: safe relative names, allowed types, a cap on their number and on each
one's size, checked before anything is written where the rest of ragmeter reads."""

from __future__ import annotations

import asyncio
import errno
import re
from collections.abc import Collection, Sequence
from pathlib import Path, PurePosixPath

from fastapi import UploadFile

from ragmeter.errors import ConfigError, LimitError
from ragmeter.service.envelope import ApiError
from ragmeter.store.names import normal_text

__all__ = ["safe_name", "save_uploads"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")  # C0, DEL, C1, line breaks
_DRIVE = re.compile(r"^[A-Za-z]:")
_CHUNK = 1 << 20
#: bytes of one path component on common file systems (ext4, APFS, NTFS in UTF-16 units)
_MAX_PART_BYTES = 255


def safe_name(filename: str | None) -> str:
    """``filename`` as a relative POSIX path inside the upload, or a 400 saying why not:
    no absolute paths, ``..`` or ``.`` parts, backslashes, drive letters or control bytes."""
    if not filename or not filename.strip():
        raise ApiError(400, "invalid_upload", "an uploaded file has no file name")
    try:  # NFKC, and no bidi, zero-width or other invisible characters
        name = normal_text(filename.strip(), f"unsafe file name {filename[:200]!r}")
    except ConfigError as exc:
        raise ApiError(400, "invalid_upload", str(exc)) from None
    unsafe = (
        _CONTROL.search(name)
        or "\\" in name
        or _DRIVE.match(name)
        or name.startswith("/")
        or any(part in ("", ".", "..") for part in name.split("/"))
        or len(name) > 500
    )
    if unsafe:
        raise ApiError(
            400,
            "invalid_upload",
            f"unsafe file name {filename[:200]!r}: use a relative path without '..', '.', "
            "backslashes, a leading '/' or control characters, at most 500 characters",
        )
    long = next((p for p in name.split("/") if len(p.encode()) > _MAX_PART_BYTES), None)
    if long is not None:
        raise ApiError(
            400,
            "invalid_upload",
            f"file name {long[:60]!r}... is longer than {_MAX_PART_BYTES} bytes; "
            "each folder or file name in an upload's path must fit a file system",
        )
    return str(PurePosixPath(name))


def _suffix_of(name: str) -> str:
    return PurePosixPath(name).suffix.lower()


def _check_names(files: Sequence[UploadFile], suffixes: Collection[str] | None) -> list[str]:
    names = [safe_name(f.filename) for f in files]
    for name in names:
        if suffixes is not None and _suffix_of(name) not in suffixes:
            raise ApiError(
                415,
                "unsupported_type",
                f"{name}: unsupported file type '{_suffix_of(name) or '(none)'}'; "
                f"upload {', '.join(sorted(suffixes))}",
            )
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ApiError(400, "invalid_upload", f"file name given twice: {', '.join(duplicates)}")
    return names


def _copy(upload: UploadFile, folder: Path, name: str, max_bytes: int) -> None:
    """Write one upload under ``folder`` (blocking: called in a worker thread)."""
    target = folder / name
    target.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with target.open("wb") as out:
        while chunk := upload.file.read(_CHUNK):
            written += len(chunk)
            if written > max_bytes:
                raise ApiError(
                    413,
                    "too_large",
                    f"{name} is larger than {max_bytes / 1_000_000:g} MB ([server] max_upload_mb)",
                )
            out.write(chunk)


#: errors that say the name cannot be a file here (the caller's to fix); any other (a full
#: or read-only disk) is the server's and answers 500
_NAME_ERRORS = frozenset(
    {errno.ENAMETOOLONG, errno.ENOTDIR, errno.EISDIR, errno.EEXIST, errno.EINVAL, errno.EILSEQ}
)


async def save_uploads(
    files: Sequence[UploadFile],
    folder: Path,
    *,
    max_bytes: int,
    suffixes: Collection[str] | None,
    max_files: int | None = None,
) -> list[str]:
    """Write ``files`` under ``folder`` by their safe names; the names, in order. Their
    number, every name and type (``suffixes``; None takes any) are checked before any file
    is written; sizes while writing.
    A name the file system refuses (``a.md`` and ``a.md/b.md``) is a 400 naming it."""
    if not files:
        raise ApiError(400, "invalid_upload", "no files were uploaded (multipart field 'files')")
    if max_files is not None and len(files) > max_files:
        raise LimitError(
            f"{len(files)} files in one upload; at most {max_files}",
            setting="[server] max_upload_files",
            status=413,
        )
    names = _check_names(files, suffixes)
    for upload, name in zip(files, names, strict=True):
        try:
            await asyncio.to_thread(_copy, upload, folder, name, max_bytes)
        except OSError as exc:
            if exc.errno not in _NAME_ERRORS:
                raise
            raise ApiError(
                400, "invalid_upload", f"cannot store {name}: {exc.strerror or 'invalid name'}"
            ) from None
    return names
