"""A model file's sha256 without the folder it sits in: the tiny models (and some real ones) write
absolute paths of their sibling folders into their files — COMETKiwi's hparams.yaml and checkpoint
(`pretrained_model`), open_clip's config JSON (`hf_model_name`) — so the same weights built in two
caches would hash differently, and so would the releases that name them."""
from __future__ import annotations

import hashlib
import pickletools
import zipfile

from xmdata.runtime.atomic import sha256_file

PLACEHOLDER = "<models>"
TEXT_SUFFIXES = (".json", ".yaml", ".yml", ".txt", ".cfg")
# torch.save's per-save id (a digest of the other records): derived, and path-dependent through them.
DERIVED_MEMBERS = (".data/serialization_id",)


def content_sha256(path: str, home: str) -> str:
    """sha256 of the file with `home` (an absolute folder) written as <models>; other files as they are."""
    if path.endswith(TEXT_SUFFIXES):
        data = open(path, "rb").read()
        return hashlib.sha256(data.replace(home.encode(), PLACEHOLDER.encode())).hexdigest()
    if zipfile.is_zipfile(path):  # torch checkpoints (.ckpt, .pt, .bin): a zip of pickles and tensors
        return _zip_sha256(path, home)
    return sha256_file(path)


def _zip_sha256(path: str, home: str) -> str:
    digest = hashlib.sha256()
    with zipfile.ZipFile(path) as archive:
        for name in sorted(archive.namelist()):
            if name.endswith(DERIVED_MEMBERS):
                continue
            data = archive.read(name)
            digest.update(name.encode() + b"\0")
            digest.update(_pickle_sha256(data, home) if name.endswith(".pkl") else hashlib.sha256(data).digest())
    return digest.hexdigest()


def _pickle_sha256(data: bytes, home: str) -> bytes:
    """The pickle's opcodes and arguments, strings with `home` replaced; read, never executed (a
    string's length prefix changes with the path, so its bytes cannot just be substituted)."""
    digest = hashlib.sha256()
    for opcode, arg, _ in pickletools.genops(data):
        if isinstance(arg, str):
            arg = arg.replace(home, PLACEHOLDER)
        elif opcode.name == "FRAME":
            arg = None  # a frame's size follows the lengths of the strings inside it
        digest.update(f"{opcode.name}\0{arg!r}\n".encode())
    return digest.digest()
