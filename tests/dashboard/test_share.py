"""Share with the class: the QR code decodes to exactly the link that reproduces the view, and nothing else.

The QR image is decoded by zxing-cpp (a C++ reader, nothing shared with segno, which draws it). The link is then
opened in a new AppTest: every shared widget must hold the value it had on the page that made the link.
"""

from __future__ import annotations

import io
from urllib.parse import parse_qsl, urlsplit

import pytest
import zxingcpp
from PIL import Image
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

from dashboard.classroom import share
from dashboard.classroom.share import LEFT_OUT, SHARED_KEYS, clean_base, qr_png, view_link, view_query
from dashboard.state.settings import LINK_KEYS
from tests.dashboard.conftest import make_app, no_exception


def decode(png: bytes) -> str:
    """The text of the one QR code in ``png``."""
    [found] = zxingcpp.read_barcodes(Image.open(io.BytesIO(png)).convert("L"))
    assert found.format == zxingcpp.BarcodeFormat.QRCode
    return found.text


@pytest.mark.parametrize(
    "link",
    [
        "https://attention-lab.streamlit.app/?seed=5&view=heads",
        "?sentence=l%27%C3%A9l%C3%A8ve+%3Cb%3E%26+%F0%9F%90%88&n_heads=16&d_model=512&causal=true",
        "http://127.0.0.1:8501/?" + "&".join(f"{k}=x" for k in SHARED_KEYS) + "&sentence=" + "word+" * 60,
    ],
)
def test_the_qr_code_decodes_to_the_link(link):
    assert decode(qr_png(link)) == link


def test_the_link_carries_only_shared_keys():
    values = {k: "x" for k in LINK_KEYS} | {"key": "SECRET", "_room_teacher": ("ABCDEF", "SECRET"), "room_follow": 1}
    query = view_query(values)
    assert set(query) == set(SHARED_KEYS) == LINK_KEYS - LEFT_OUT
    assert "SECRET" not in view_link(values, "https://x.example/")
    assert "presenter" not in query and "room" not in query  # the students' own layout; a room has its own link


def test_values_are_written_as_the_url_holds_them():
    q = view_query({"causal": True, "scaled": False, "seed": 7, "lr": 0.003, "sentence": "a&b c", "tour": None})
    assert q == {"causal": "true", "scaled": "false", "seed": "7", "lr": "0.003", "sentence": "a&b c"}
    assert view_link({"seed": 7}, "https://x.example/app/") == "https://x.example/app/?seed=7"


def test_base_urls():
    assert clean_base("https://attention-lab.streamlit.app") == "https://attention-lab.streamlit.app/"
    assert clean_base(" http://h:8501/app?x=1#y ") == "http://h:8501/app/"
    for bad in ("", "attention-lab.streamlit.app", "javascript:alert(1)", "ftp://h/", "https://"):
        assert clean_base(bad) is None


@pytest.fixture
def media(monkeypatch) -> dict[str, bytes]:
    """Every file the page hands to Streamlit's media storage, by the URL the image element shows."""
    saved: dict[str, bytes] = {}
    original = MemoryMediaFileStorage.load_and_get_id

    def load_and_get_id(self, data, mimetype, kind, filename=None):
        file_id = original(self, data, mimetype, kind, filename)
        saved[self.get_url(file_id)] = data
        return file_id

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", load_and_get_id)
    return saved


def open_share_dialog(at):
    at.run()
    at.button(key="share_button").click().run()
    no_exception(at)
    [image] = at.get("image")
    [link] = [c.value for c in at.get("code") if "?" in c.value and "\n" not in c.value]
    return image, link


QUERY = dict(presenter="true", seed="5", n_heads="2", causal="true", positional="rope", sentence="dog bites man")


def test_the_dialog_shows_the_view_link_as_qr_and_text_and_it_reproduces_the_view(media, monkeypatch):
    monkeypatch.setenv(share.PUBLIC_URL_ENV, "https://attention-lab.streamlit.app")
    teacher = make_app(**QUERY)
    image, link = open_share_dialog(teacher)
    assert decode(media[image.proto.imgs[0].url]) == link  # the image is exactly the link shown
    assert link.startswith("https://attention-lab.streamlit.app/?")
    assert not teacher.info  # a configured address needs no note
    query = dict(parse_qsl(urlsplit(link).query, keep_blank_values=True))
    assert "presenter" not in query and set(query) <= set(SHARED_KEYS)
    student = make_app(**query).run()
    no_exception(student)
    assert not student.warning  # every value of the link could be used
    for key in query:
        assert student.session_state[key] == teacher.session_state[key], key
    assert student.session_state["presenter"] is False


def test_without_a_public_address_the_dialog_says_what_it_encodes(media, monkeypatch):
    monkeypatch.delenv(share.PUBLIC_URL_ENV, raising=False)
    at = make_app(**QUERY)
    at.context = {"url": "http://localhost:8501/?seed=5"}
    _, link = open_share_dialog(at)
    assert link.startswith("http://localhost:8501/?")
    [note] = [i.value for i in at.info]
    assert "address this browser used" in note and share.PUBLIC_URL_ENV in note and share.PUBLIC_URL_SECRET in note
    relative = make_app(**QUERY)
    _, link = open_share_dialog(relative)
    assert link.startswith("?")
    assert any("only the part after it" in i.value for i in relative.info)


def test_the_secret_sets_the_public_address(media, monkeypatch):
    monkeypatch.delenv(share.PUBLIC_URL_ENV, raising=False)
    at = make_app(**QUERY)
    at.secrets[share.PUBLIC_URL_SECRET] = "https://class.example.org/lab"
    _, link = open_share_dialog(at)
    assert link.startswith("https://class.example.org/lab/?")


def test_share_is_a_presenter_mode_button():
    at = make_app().run()
    assert "share_button" not in [b.key for b in at.button]
