"""Builders for hostile and tricky PDFs (generated, never committed)."""

from __future__ import annotations

import zlib
from pathlib import Path

import pymupdf


def theorem_pdf(path: Path) -> Path:
    """A small paper with sections, a theorem, a proof and a numbered equation."""
    doc = pymupdf.open()
    page = doc.new_page()
    y = 72
    lines = [
        ("A Note on Quasi-Convex Flows", 16, "hebo"),
        ("1 Introduction", 12, "hebo"),
        ("We study quasi-convex flows on compact manifolds and their energy decay.", 10, "helv"),
        ("2 Main Result", 12, "hebo"),
        ("Theorem 1. Every quasi-convex flow with bounded curvature converges.", 10, "helv"),
        ("E(t) = E(0) exp(-2 lambda t) (1)", 10, "helv"),
        ("Proof. Integrate the energy identity and apply Gronwall's inequality.", 10, "helv"),
    ]
    for text, size, font in lines:
        page.insert_text((72, y), text, fontsize=size, fontname=font)
        y += 30
    doc.save(path)
    return path


def many_pages_pdf(path: Path, pages: int = 5000) -> Path:
    doc = pymupdf.open()
    for i in range(pages):
        doc.new_page(width=200, height=200).insert_text((20, 50), f"page {i}")
    doc.save(path)
    return path


def encrypted_pdf(path: Path) -> Path:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "secret content of an encrypted paper")
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="u", owner_pw="o")
    return path


def truncated_pdf(source: Path, path: Path) -> Path:
    data = source.read_bytes()
    path.write_bytes(data[: len(data) // 7])
    return path


def flate_bomb_pdf(path: Path, inflated_mb: int = 1500) -> Path:
    """One page whose content stream inflates to ``inflated_mb`` MiB of operators."""
    comp = zlib.compressobj(9)
    chunk = b"0 0 m 1 1 l S\n" * 75_000  # ~1 MiB
    body = b"".join(comp.compress(chunk) for _ in range(inflated_mb)) + comp.flush()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(body) + body + b"\nendstream",
    ]
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    path.write_bytes(bytes(out))
    return path


def text_pdf(path: Path, pages: int = 30, marker: str = "") -> Path:
    """Many pages of plain prose: slow enough to ingest that a test can crash it midway."""
    doc = pymupdf.open()
    for i in range(pages):
        page = doc.new_page()
        for line in range(40):
            words = f"{marker} section {i} line {line} quasi-convex energy estimates decay"
            page.insert_text((50, 60 + line * 17), words, fontsize=9)
    doc.save(path)
    return path


def padded_pdf(path: Path, total_bytes: int) -> Path:
    """A readable PDF made large by an embedded attachment of incompressible bytes."""
    import os

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "A large paper with supplementary data.", fontsize=12)
    doc.embfile_add("supplement.bin", os.urandom(total_bytes), filename="supplement.bin")
    doc.save(path)
    return path


def _objects_pdf(objects: list[bytes]) -> bytes:
    """A PDF file around ``objects`` (numbered from 1) with a classic xref table."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def text_bomb_pdf(path: Path, inflated_mb: int = 300) -> Path:
    """A ~1 MB PDF whose one page's content stream inflates to ``inflated_mb`` MiB of
    text operators: text extraction of it grows without bound (13 GB seen unlimited).

    Built in ~0.1 s: after a full flush a deflate block depends on nothing before
    it, so one compressed 1 MiB block is repeated, and the Adler-32 is computed
    over the repeats (cheap) so the stream is valid to the last byte.
    """
    line = b"BT /F1 1 Tf 10 10 Td (" + b"A" * 200 + b") Tj ET\n"
    chunk = line * ((1 << 20) // len(line))
    comp = zlib.compressobj(9)
    first = comp.compress(chunk) + comp.flush(zlib.Z_FULL_FLUSH)
    block = comp.compress(chunk) + comp.flush(zlib.Z_FULL_FLUSH)
    adler = 1
    for _ in range(inflated_mb):
        adler = zlib.adler32(chunk, adler)
    # b"\x03\x00": an empty final fixed-Huffman block, then the zlib trailer.
    body = first + block * (inflated_mb - 1) + b"\x03\x00" + adler.to_bytes(4, "big")
    path.write_bytes(
        _objects_pdf(
            [
                b"<< /Type /Catalog /Pages 2 0 R >>",
                b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
                b" /Resources << /Font << /F1 5 0 R >> >> >>",
                b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(body)
                + body
                + b"\nendstream",
                b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            ]
        )
    )
    return path


def xref_bomb_pdf(path: Path, sections: int = 4, entries: int = 8_000_000) -> Path:
    """A ~200 KB PDF whose chained cross-reference streams each declare ``entries``
    objects: merely opening it (what the upload check does) takes ~350 MB per
    section (1.4 GB for 4 here), before any page is read."""
    out = bytearray(b"%PDF-1.7\n")
    offsets: dict[int, int] = {}
    pages = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
    ]
    for number, obj in enumerate(pages, start=1):
        offsets[number] = len(out)
        out += b"%d 0 obj\n" % number + obj + b"\nendobj\n"
    previous: int | None = None
    for section in range(sections):
        here = len(out)
        # /W [1 4 1]: type, offset, generation; objects 1-3 and this stream in use,
        # the millions of others free (all zero bytes: they compress to nothing).
        rows = bytearray(b"\x00\x00\x00\x00\x00\xff")
        for number in (1, 2, 3):
            rows += b"\x01" + offsets[number].to_bytes(4, "big") + b"\x00"
        rows += b"\x01" + here.to_bytes(4, "big") + b"\x00"
        data = zlib.compress(bytes(rows) + bytes(6 * (entries - 5)), 9)
        head = b"<< /Type /XRef /Size %d /W [1 4 1] /Root 1 0 R /Length %d /Filter /FlateDecode" % (
            entries,
            len(data),
        )
        if previous is not None:
            head += b" /Prev %d" % previous
        out += b"%d 0 obj\n" % (4 + section) + head + b" >>\nstream\n" + data
        out += b"\nendstream\nendobj\n"
        previous = here
    out += b"startxref\n%d\n%%%%EOF\n" % previous
    path.write_bytes(bytes(out))
    return path
