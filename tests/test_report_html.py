"""`nlq report --format html`: a self-contained page, its charts, and how a browser shows it."""

from __future__ import annotations

import shutil
import struct
import subprocess
import tempfile
import zlib
from html.parser import HTMLParser

import pytest

from nlq.commands import cli
from nlq import io, report, report_html
from tests.test_report import BASELINE, SAG, _records, _score

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# The flags a sandboxed machine with no network needs (no background fetches, no GPU).
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class _Elements(HTMLParser):
    """Counts tags, classes and every URL-bearing attribute of a page."""

    def __init__(self):
        super().__init__()
        self.tags: dict = {}
        self.classes: dict = {}
        self.urls: list = []

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for name, value in attrs:
            if name == "class":
                self.classes[value] = self.classes.get(value, 0) + 1
            if name in ("src", "href") or (name == "xmlns" and value != "http://www.w3.org/2000/svg"):
                self.urls.append(value)


def _parse(page: str) -> _Elements:
    parser = _Elements()
    parser.feed(page)
    return parser


def _runs(tmp_path, with_extras=True):
    records = {"baseline": _records(BASELINE, "baseline"), "sag": _records(SAG, "sag")}
    if with_extras:
        for i, r in enumerate(records["baseline"]):
            r["prediction"]["confidence"] = 0.05 + 0.1 * i
        for r in records["sag"]:
            r["repair"] = {"vote_share": 1.0 if r["score"]["exc"] else 0.34, "rounds": 1, "attempts": 3}
            r["prediction"]["usage"] = {"model_calls": 4, "prompt_tokens": 900, "completion_tokens": 100}
    paths = []
    for name, recs in records.items():
        path = tmp_path / f"{name}.scored.jsonl"
        io.write_records(recs, str(path))
        paths.append(str(path))
    return paths


def test_the_page_is_self_contained_with_one_chart_per_section(tmp_path):
    paths = _runs(tmp_path)
    page = report.run(paths, by=["db", "labels.schema_flex"], ref="sag", fmt="html", bootstrap=200,
                      cascade_fallback="sag")
    found = _parse(page)
    assert found.urls == [] and "<script" not in page and "@import" not in page and "url(" not in page
    # decomposition + 2 slices + 2 reliability diagrams + the cascade
    assert found.tags["svg"] == 6
    assert found.classes["segment"] == 8 + 4  # non-empty buckets: baseline 8, sag 4
    assert found.classes["slice-bar"] == 2 * 3 + 2 * 4 and found.classes["ci"] == 14
    assert found.classes["rel-bar"] >= 3 and found.classes["diagonal"] == 2
    assert found.classes["cascade-exc"] == 1 and found.classes["cascade-calls_saved"] == 1
    assert found.tags["table"] == len(report.tables(report.build(report.load_runs(paths), by=["db", "labels.schema_flex"],
                                                                  ref="sag", bootstrap=0)))
    assert "p vs sag" in page and "0.0625" in page  # the McNemar p of the terminal table
    assert "70.0%" in page and "n=4" in page


def test_segments_are_proportional_and_labelled():
    records = [{"id": str(i), "score": _score(o)} for i, o in enumerate(["correct"] * 3 + ["empty"])]
    built = report.build([report.Run("r", records)], bootstrap=0)
    svg = report_html.decomposition_chart(built)
    widths = [float(w) for w in __import__("re").findall(r'class="segment" x="[\d.]+" y="[\d.]+" width="([\d.]+)"', svg)]
    assert len(widths) == 2 and widths[0] == pytest.approx(3 * widths[1], rel=1e-3)
    assert ">75.0%<" in svg and ">25.0%<" in svg and report_html.COLOURS["correct"] in svg


def test_charts_only_when_their_fields_are_present(tmp_path):
    page = report.run(_runs(tmp_path, with_extras=False), fmt="html", bootstrap=0)
    assert "Reliability" not in page and "Cascade" not in page and _parse(page).tags["svg"] == 1


def test_run_names_are_escaped():
    built = report.build([report.Run("<b>x</b>", [{"id": "a", "score": _score("correct")}])], bootstrap=0)
    page = report.render(built, "html")
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page


def test_cli_writes_the_page(runner, tmp_path):
    out = tmp_path / "report.html"
    result = runner.invoke(cli, ["report", *_runs(tmp_path), "--format", "html", "--layout", "paper",
                                 "-o", str(out), "--bootstrap", "0"])
    assert result.exit_code == 0, result.stderr
    assert out.read_text().startswith("<!DOCTYPE html>") and "Accuracy and outcome decomposition" in out.read_text()


# --- in a real browser ---------------------------------------------------------------

def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and the unfiltered scanlines of an 8-bit, non-interlaced RGB(A) PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0
    bpp = 3 if colour == 2 else 4
    raw, stride, lines, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        lines.append(bytes(line))
        prev = line
    return width, height, [bytes(x) for x in lines], bpp


def _chromium(*args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, timeout=120)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make browser installs it)")
def test_chromium_renders_the_charts(tmp_path):
    page = tmp_path / "report.html"
    page.write_text(report.run(_runs(tmp_path), by=["db"], fmt="html", bootstrap=100, cascade_fallback="sag"))
    dom = _chromium("--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr.decode()[-2000:]
    found = _parse(dom.stdout.decode())
    assert found.tags.get("svg") == 5 and found.classes.get("segment") == 12 and found.tags.get("rect", 0) > 30
    shot = tmp_path / "shot.png"
    result = _chromium("--window-size=900,700", "--hide-scrollbars", f"--screenshot={shot}", page.as_uri())
    assert result.returncode == 0 and shot.exists(), result.stderr.decode()[-2000:]
    width, height, lines, bpp = _png_pixels(shot.read_bytes())
    assert (width, height) == (900, 700)
    pixels = {line[i:i + 3] for line in lines[::4] for i in range(0, len(line), bpp * 4)}
    assert len(pixels) > 20, "the screenshot is blank"
    drawn = {bytes.fromhex(report_html.COLOURS[b][1:]) for b in ("correct", "empty", "value_mismatch")}
    assert drawn <= {line[i:i + 3] for line in lines for i in range(0, len(line), bpp)}, \
        "the decomposition bars are not on screen"
