"""Uploaded files: safe relative names, allowed types, and a size cap per file, checked
before anything is written where the rest of ragmeter reads."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Sequence
from pathlib import Path, PurePosixPath

from fastapi import UploadFile

from ragmeter.service.envelope import ApiError

__all__ = ["safe_name", "save_uploads"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DRIVE = re.compile(r"^[A-Za-z]:")
_CHUNK = 1 << 20


def safe_name(filename: str | None) -> str:
    """``filename`` as a relative POSIX path inside the upload, or a 400 saying why not:
    no absolute paths, ``..`` or ``.`` parts, backslashes, drive letters or control bytes."""
    if not filename or not filename.strip():
        raise ApiError(400, "invalid_upload", "an uploaded file has no file name")
    name = unicodedata.normalize("NFC", filename.strip())
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
            f"unsafe file name {filename!r}: use a relative path without '..', '.', "
            "backslashes, a leading '/' or control characters",
        )
    return str(PurePosixPath(name))


def _suffix_of(name: str) -> str:
    return PurePosixPath(name).suffix.lower()


async def save_uploads(
    files: Sequence[UploadFile], folder: Path, *, max_bytes: int, suffixes: Collection[str]
) -> list[str]:
    """Write ``files`` under ``folder`` by their safe names; the names, in order. Every name
    and type is checked before any file is written; sizes while writing."""
    if not files:
        raise ApiError(400, "invalid_upload", "no files were uploaded (multipart field 'files')")
    names = [safe_name(f.filename) for f in files]
    for name in names:
        if _suffix_of(name) not in suffixes:
            raise ApiError(
                415,
                "unsupported_type",
                f"{name}: unsupported file type '{_suffix_of(name) or '(none)'}'; "
                f"upload {', '.join(sorted(suffixes))}",
            )
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ApiError(400, "invalid_upload", f"file name given twice: {', '.join(duplicates)}")
    for upload, name in zip(files, names, strict=True):
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        written = 0
        with target.open("wb") as out:
            while chunk := await upload.read(_CHUNK):
                written += len(chunk)
                if written > max_bytes:
                    raise ApiError(
                        413,
                        "too_large",
                        f"{name} is larger than {max_bytes / 1_000_000:g} MB "
                        "([server] max_upload_mb)",
                    )
                out.write(chunk)
    return names
