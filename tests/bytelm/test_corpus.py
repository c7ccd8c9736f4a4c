"""The corpus (attnscale.bytelm.corpus): the stored text, checked against its SHA-256, and
its split by byte offset."""

import numpy as np

from attnscale.bytelm import corpus


def test_the_corpus_is_the_stored_text_and_its_split():
    data = corpus.load_bytes()
    assert data.size == corpus.SIZE >= 2_000_000
    train, valid = corpus.split(data)
    assert train.size == int(0.9 * data.size) and train.size + valid.size == data.size
    assert np.array_equal(np.concatenate([train, valid]), data)
    assert (corpus.CORPUS.parent / "copyright").exists() and (corpus.CORPUS.parent / "README.md").exists()


def test_a_corpus_file_with_other_text_is_refused(tmp_path, monkeypatch):
    """The SHA-256 check: the corpus's path holding other text is refused, naming the path."""
    import lzma

    bad = tmp_path / "fortunes.txt.xz"
    bad.write_bytes(lzma.compress(b"not the fortunes\n" * 1000))
    monkeypatch.setattr(corpus, "CORPUS", bad)
    corpus._read.cache_clear()
    try:
        with np.testing.assert_raises(ValueError) as err:
            corpus.load_bytes(bad)
        assert str(err.exception).startswith("path ")
    finally:
        corpus._read.cache_clear()
