"""The classifier: links, media, files and leftover text from one message."""

from __future__ import annotations

from grove.core.messages import Attachment
from nodes.ingestion.classify_input import classify_input, classify_message, find_urls, note_label


def test_several_urls_with_punctuation_stripped() -> None:
    text = (
        "Почитай https://example.com/a, потом (https://example.org/b?x=1&y=2). "
        "И ещё «https://пример.рф/статья»! А вот вики: https://en.wikipedia.org/wiki/Python_(language). "
        "Повтор https://example.com/a; и http://test.io/path/…"
    )
    items = classify_message(text, [])
    links = [item for item in items if item.kind == "link"]
    assert [item.url for item in links] == [
        "https://example.com/a",
        "https://example.org/b?x=1&y=2",
        "https://пример.рф/статья",
        "https://en.wikipedia.org/wiki/Python_(language)",
        "http://test.io/path/",
    ]
    assert all(item.source_identifier == item.url for item in links)


def test_a_long_note_beside_a_link_becomes_a_text_item() -> None:
    note = "Важная мысль про берёзовые рощи и полив: поливать раз в неделю, " * 4
    text = note[:100] + " https://example.com/article " + note[100:]
    items = classify_message(text, None)
    assert [item.kind for item in items] == ["link", "text"]
    assert "https://" not in (items[1].text or "") and "берёзовые рощи" in (items[1].text or "")


def test_a_caption_beside_a_link_is_not_indexed() -> None:
    items = classify_message("Почитай https://example.com/a и ещё https://example.com/b, пожалуйста", None)
    assert [item.kind for item in items] == ["link", "link"]


def test_short_leftover_is_dropped() -> None:
    items = classify_message("Глянь: https://example.com/x !!", [])
    assert [item.kind for item in items] == ["link"]
    assert classify_message("Привет, как дела?", []) == []  # 14 non-space characters


def test_plain_text_only() -> None:
    text = "Берёзы сажают весной, а дубы — осенью, и это надо помнить."
    [item] = classify_message(text, [])
    assert item.kind == "text" and item.text == text and item.source_identifier == note_label(text)


def test_media_and_files_are_routed() -> None:
    attachments = [
        Attachment(kind="voice", file_id="v1", mime_type="audio/ogg", duration=5),
        Attachment(kind="audio", file_id="a1", file_name="song.mp3", mime_type="audio/mpeg"),
        Attachment(kind="video", file_id="vid1", mime_type="video/mp4"),
        Attachment(kind="video_note", file_id="vn1"),
        Attachment(kind="document", file_id="d1", file_name="lecture.m4a", mime_type="audio/mp4"),
        Attachment(kind="document", file_id="d2", file_name="clip.MKV"),  # no mime: by extension
        Attachment(kind="document", file_id="d3", file_name="report.pdf", mime_type="application/pdf",
                   file_size=1234),
        Attachment(kind="document", file_id="d4", file_name="notes.docx"),
        Attachment(kind="document", file_id="d5", file_name="weird.xyz"),  # parser will refuse it
        Attachment(kind="photo", file_id="p1"),
    ]
    items = classify_message(None, attachments)
    assert [(item.kind, item.telegram_file_id) for item in items] == [
        ("media", "v1"), ("media", "a1"), ("media", "vid1"), ("media", "vn1"),
        ("media", "d1"), ("media", "d2"),
        ("file", "d3"), ("file", "d4"), ("file", "d5"), ("file", "p1"),
    ]
    report = items[6]
    assert report.source_identifier == "report.pdf"
    assert report.file_name == "report.pdf" and report.mime_type == "application/pdf"
    assert report.file_size == 1234
    assert items[0].source_identifier == "v1"  # no file name: the Telegram file id


def test_dict_attachments_with_caption_links() -> None:
    items = classify_message(
        "Конспект и источник: https://example.com/source",
        [{"kind": "document", "file_id": "d9", "file_name": "конспект.txt", "mime_type": "text/plain"}],
    )
    assert [(item.kind, item.source_identifier) for item in items] == [
        ("link", "https://example.com/source"),
        ("file", "конспект.txt"),
    ]


def test_find_urls_ignores_bare_scheme() -> None:
    assert find_urls("адрес http:// не дописан, а https://. тоже") == []


def test_task_wrapper() -> None:
    assert classify_input.name == "classify-input"
    items = classify_input.fn("https://a.example/1 https://b.example/2", [])
    assert [item.url for item in items] == ["https://a.example/1", "https://b.example/2"]


def test_a_note_is_named_by_its_opening_words() -> None:
    short = "Берёзы сажают весной, а дубы — осенью."
    assert note_label(short) == short
    long = "Ремонтантную малину весной подкармливают азотом: 15 г мочевины на квадратный метр."
    label = note_label(long)
    assert label == "Ремонтантную малину весной подкармливают…"  # cut at a word, within 48 characters


def test_a_link_of_another_scheme_is_a_link_to_refuse_not_text() -> None:
    items = classify_message("Проиндексируй file:///etc/passwd и gopher://127.0.0.1:25/ пожалуйста", [])
    assert [(i.kind, i.source_identifier) for i in items] == [("link", "file:///etc/passwd"),
                                                             ("link", "gopher://127.0.0.1:25/")]
    assert [u for u, _, _ in find_urls("см. https://example.com/a, а не https://")] == ["https://example.com/a"]
