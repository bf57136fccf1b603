"""Tokenisation, sentence splitting, vocabulary and batch encoding (textcls.data.text)."""
import csv
import gzip
import json
import time

import pytest
import torch

import textcls
from textcls.data.text import PAD, UNK, Encoded, Tokenizer, TokenizerConfig, Vocab, clean_text, split_sentences


@pytest.fixture(scope="module")
def sst2_texts(bundled_data):
    with gzip.open(bundled_data / "sst2" / "train.csv.gz", "rt", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))[1:301]
    return [r[0] for r in rows]


@pytest.fixture(scope="module")
def tok(sst2_texts):
    return Tokenizer.build(sst2_texts, TokenizerConfig(max_len=20))


# ------------------------------------------------------------------------------------------------ tokens

def test_word_tokens_raw_text():
    t = Tokenizer()
    assert t.tokenize("Don't stop, it's 3.5 times the U.S. average -- in the '70s!") == [
        "do", "n't", "stop", ",", "it", "'s", "3.5", "times", "the", "u.s.", "average", "--", "in", "the",
        "'70s", "!"]
    assert t.tokenize("A re-imagining... wow") == ["a", "re-imagining", "...", "wow"]
    assert Tokenizer(TokenizerConfig(entities="keep")).tokenize("The <e1>fish</e1> has <e2>lungs</e2>.") == [
        "the", "<e1>", "fish", "</e1>", "has", "<e2>", "lungs", "</e2>", "."]
    # a model not made for relations (entities="none") does not read the tags as (unknown) words (issue 27.8)
    assert t.tokenize("The <E1>fish</e1> has <e2>lungs</e2> <b>.") == ["the", "fish", "has", "lungs", "<b>", "."]
    assert t.tokenize("1,000 people at 10:30") == ["1,000", "people", "at", "10:30"]


def test_bundled_sst2_is_already_space_tokenised(sst2_texts):
    """On Kim's pre-tokenised SST-2 the regex reproduces the file's own tokens almost everywhere."""
    t = Tokenizer()
    same = sum(t.tokenize(x) == x.split() for x in sst2_texts)
    assert same / len(sst2_texts) > 0.95
    line = "it 's a -lrb- good -rrb- film , is n't it ... `` yes '' -- mr. x ?"
    assert t.tokenize(line) == line.split()


def test_lowercase_option():
    assert Tokenizer(TokenizerConfig(lowercase=False)).tokenize("What IS it ?") == ["What", "IS", "it", "?"]
    assert Tokenizer().tokenize("What IS it ?") == ["what", "is", "it", "?"]


def test_html_breaks_entities_and_control_characters():
    t = Tokenizer()
    assert t.tokenize("bad.<br /><br />Really<BR>bad") == ["bad", ".", "really", "bad"]
    assert t.tokenize("Women #39;s NIT &amp; more") == ["women", "'s", "nit", "&", "more"]
    assert t.tokenize("a\x00b\x07c\u200bd e\tf\nG") == ["abcd", "e", "f", "g"]
    assert t.tokenize("it\u2019s fine") == ["it", "'s", "fine"]
    assert clean_text("  many   spaces\r\n here ") == "many spaces here"
    assert Tokenizer(TokenizerConfig(strip_html=False)).tokenize("a<br/>b") == ["a", "<", "br", "/", ">", "b"]
    with pytest.raises(TypeError, match="str"):
        t.tokenize(None)


def test_emoji_and_non_latin_text():
    t = Tokenizer()
    assert t.tokenize("great 😀👍 movie") == ["great", "😀", "👍", "movie"]
    assert t.tokenize("Ça va très bien") == ["ça", "va", "très", "bien"]
    assert t.tokenize("\u0063\u0327a") == ["\u00e7a"]   # decomposed -> NFC


def test_character_level():
    t = Tokenizer(TokenizerConfig(level="char"))
    assert t.tokenize(" Ab  c!\n") == ["a", "b", " ", "c", "!"]
    enc = Tokenizer.build(["abc"], TokenizerConfig(level="char", max_len=2)).encode(["abcd", ""])
    assert enc.tokens == [["a", "b"], []]
    assert enc.truncated == [True, False]


def test_config_is_validated():
    with pytest.raises(ValueError, match="level"):
        TokenizerConfig(level="bpe")
    with pytest.raises(ValueError, match="max_len"):
        TokenizerConfig(max_len=0)
    with pytest.raises(ValueError, match="unknown tokenizer settings"):
        TokenizerConfig.from_dict({"max_length": 3})


# ------------------------------------------------------------------------------------------------ sentences

def test_split_sentences_rules():
    s = "a b . c d ! e".split()
    assert split_sentences(s) == [["a", "b", "."], ["c", "d", "!"], ["e"]]            # remainder is last
    assert split_sentences("a ? b .".split()) == [["a", "?"], ["b", "."]]
    assert split_sentences("wow ! ? great .".split()) == [["wow", "!"], ["?"], ["great", "."]]
    assert split_sentences(["one", "sentence"]) == [["one", "sentence"]]
    assert split_sentences([]) == []
    assert split_sentences(["."]) == [["."]]
    assert Tokenizer().split_sentences(["x", ".", "y"]) == [["x", "."], ["y"]]
    t = Tokenizer()
    assert t.split_sentences(t.tokenize("Mr. Smith left the U.S. in May... It rained! Then?")) == [
        ["mr.", "smith", "left", "the", "u.s.", "in", "may", "...", "it", "rained", "!"], ["then", "?"]]


def test_hierarchical_encode_agrees_with_split_sentences(bundled_data):
    """The lazy splitter used by encode gives exactly HCAN's split_sentences, with its truncation."""
    with gzip.open(bundled_data / "trec" / "dev.csv.gz", "rt", newline="", encoding="utf-8") as f:
        texts = [r[0] for r in list(csv.reader(f))[1:101]]
    texts = [" ".join(texts[i:i + 5]) for i in range(0, 100, 5)] + ["! ? . a", "no end", ""]
    cfg = TokenizerConfig(hierarchical=True, max_sentences=3, max_words=7)
    t = Tokenizer.build(texts, cfg)
    enc = t.encode(texts)
    for i, text in enumerate(texts):
        full = split_sentences(t.tokenize(text))
        assert enc.sentences[i] == split_sentences(t.tokenize(text), max_sentences=3, max_words=7)
        assert enc.truncated[i] == (len(full) > 3 or any(len(x) > 7 for x in full))


# ------------------------------------------------------------------------------------------------ vocabulary

def test_vocab_build_order_min_freq_max_size():
    lists = [["b", "a", "c"], ["a", "b"], ["a", "d"], ["<pad>", "<unk>"]]
    v = Vocab.build(lists)
    assert v.itos == [PAD, UNK, "a", "b", "c", "d"]           # by frequency, ties alphabetical
    assert (v.pad_id, v.unk_id, v.stoi["a"]) == (0, 1, 2)
    assert Vocab.build(lists, min_freq=2).itos == [PAD, UNK, "a", "b"]
    assert Vocab.build(lists, max_size=3).itos == [PAD, UNK, "a"]
    assert len(Vocab.build(lists, max_size=3)) == 3
    with pytest.raises(ValueError):
        Vocab.build(lists, min_freq=0)
    with pytest.raises(ValueError):
        Vocab(["a", "b"])


def test_vocab_json_round_trip():
    v = Vocab.build([["x", "y", "x", "é", "😀"]])
    text = v.to_json()
    assert json.loads(text)["itos"][:2] == [PAD, UNK]
    assert Vocab.from_json(text) == v
    assert Vocab.from_json(json.loads(text)) == v
    with pytest.raises(ValueError, match="JSON"):
        Vocab.from_json("{not json")
    with pytest.raises(ValueError, match="itos"):
        Vocab.from_json({"tokens": []})
    with pytest.raises(ValueError, match="duplicate"):
        Vocab.from_json([PAD, UNK, "a", "a"])


def test_literal_pad_in_text_is_unknown_not_padding():
    v = Vocab.build([["a"]])
    assert v.lookup(["a", "<pad>", "<unk>", "zz"]) == [2, 1, 1, 1]


# ------------------------------------------------------------------------------------------------ encoding

def test_encode_flat(tok, sst2_texts):
    enc = tok.encode(sst2_texts[:8])
    assert isinstance(enc, Encoded)
    assert enc.token_ids.dtype == torch.long and enc.mask.dtype == torch.bool
    assert enc.token_ids.shape == enc.mask.shape == (8, max(len(t) for t in enc.tokens))
    for i, text in enumerate(sst2_texts[:8]):
        full = tok.tokenize(text)
        assert enc.tokens[i] == full[:20]
        assert enc.truncated[i] == (len(full) > 20)
        n = len(enc.tokens[i])
        assert enc.mask[i].sum() == n and enc.mask[i, :n].all()
        assert enc.token_ids[i, :n].tolist() == [tok.vocab.stoi[w] for w in enc.tokens[i]]
        assert (enc.token_ids[i, n:] == 0).all()
    assert any(enc.truncated) and not all(enc.truncated)


def test_encode_unknown_words_show_the_word(tok):
    enc = tok.encode(["zzyzx qwghlm", "the zzyzx film"])
    assert enc.tokens == [["zzyzx", "qwghlm"], ["the", "zzyzx", "film"]]
    assert enc.token_ids[0].tolist() == [1, 1, 0]
    assert enc.mask[0].tolist() == [True, True, False]
    assert enc.token_ids[1, 1] == 1 and enc.token_ids[1, 0] == tok.vocab.stoi["the"]


def test_encode_empty_and_degenerate_texts(tok):
    enc = tok.encode(["", "   ", "\x00\x01", "😀"])
    assert enc.token_ids.shape == (4, 1)                    # at least one position
    assert enc.tokens == [[], [], [], ["😀"]]
    assert not enc.mask[:3].any() and enc.mask[3, 0]
    assert (enc.token_ids[:3] == 0).all() and enc.token_ids[3, 0] == 1
    assert enc.truncated == [False] * 4
    empty = tok.encode([])
    assert empty.token_ids.shape == (0, 1) and len(empty) == 0
    assert tok.encode("one text").token_ids.shape[0] == 1
    with pytest.raises(TypeError, match="text 1"):
        tok.encode(["ok", 3])


def test_models_accept_the_empty_row(tok):
    model = textcls.create_model("kim_cnn", vocab_size=len(tok.vocab), num_labels=2, preset="small").eval()
    enc = tok.encode(["", "a good film"])
    out = model(enc.token_ids, enc.mask)
    assert torch.isfinite(out.logits).all() and out.logits.shape == (2, 2)


def test_long_text_truncates_fast(tok):
    text = ("This is a long review , with words . " * 3000)[:100_000]
    assert len(text) == 100_000
    t0 = time.perf_counter()
    enc = tok.encode([text])
    elapsed = time.perf_counter() - t0
    assert enc.token_ids.shape == (1, 20) and enc.truncated == [True]
    assert enc.tokens[0][:4] == ["this", "is", "a", "long"]
    assert elapsed < 1.0
    hier = Tokenizer(TokenizerConfig(hierarchical=True, max_sentences=3, max_words=4), tok.vocab)
    t0 = time.perf_counter()
    enc = hier.encode([text])
    assert time.perf_counter() - t0 < 1.0
    assert enc.token_ids.shape == (1, 3, 4) and enc.truncated == [True]


def test_encode_hierarchical(tok):
    hier = Tokenizer(TokenizerConfig(hierarchical=True, max_sentences=2, max_words=3), tok.vocab)
    enc = hier.encode(["the film . it is good !", "one long sentence with many words", "", "a . b . c ."])
    assert enc.token_ids.shape == enc.mask.shape == (4, 2, 3)
    assert enc.sentences[0] == [["the", "film", "."], ["it", "is", "good"]]
    assert enc.sentences[1] == [["one", "long", "sentence"]]
    assert enc.sentences[2] == []
    assert enc.sentences[3] == [["a", "."], ["b", "."]]
    assert enc.truncated == [True, True, False, True]
    assert enc.tokens[0] == ["the", "film", ".", "it", "is", "good"]
    assert enc.mask[0].all() and enc.mask[1].tolist() == [[True] * 3, [False] * 3]
    assert not enc.mask[2].any()
    assert enc.token_ids[0, 0].tolist() == [tok.vocab.stoi[w] for w in ["the", "film", "."]]
    for i in range(4):
        assert int(enc.mask[i].sum()) == len(enc.tokens[i])
    assert hier.encode([""]).token_ids.shape == (1, 1, 1)


def test_select_trims_padding(tok):
    enc = tok.encode(["a", "the film was good", "ok ."])
    sub = enc.select([0, 2])
    assert sub.token_ids.shape == (2, 2) and sub.tokens == [["a"], ["ok", "."]]
    assert torch.equal(sub.token_ids, enc.token_ids[[0, 2], :2])
    assert enc.select([0, 2], trim=False).token_ids.shape == (2, 4)


def test_tokenizer_dict_round_trip(tok, sst2_texts):
    d = json.loads(json.dumps(tok.to_dict()))
    again = Tokenizer.from_dict(d)
    a, b = tok.encode(sst2_texts[:5]), again.encode(sst2_texts[:5])
    assert torch.equal(a.token_ids, b.token_ids) and a.tokens == b.tokens
    cfg_only = tok.to_dict(include_vocab=False)
    assert Tokenizer.from_dict(cfg_only, vocab=tok.vocab).vocab == tok.vocab
    with pytest.raises(ValueError, match="vocab"):
        Tokenizer.from_dict(cfg_only)


def test_build_respects_min_freq_and_max_size(sst2_texts):
    t = Tokenizer.build(sst2_texts, min_freq=3, max_size=100)
    counts = {}
    for x in sst2_texts:
        for w in Tokenizer().tokenize(x):
            counts[w] = counts.get(w, 0) + 1
    expected = sorted((w for w, c in counts.items() if c >= 3), key=lambda w: (-counts[w], w))[:98]
    assert t.vocab.itos == [PAD, UNK] + expected
    assert len(t.vocab) == 100


def test_bidirectional_controls_are_dropped_so_tokens_read_as_typed():
    """U+202E (right-to-left override) and its kin would mirror every token drawn after them."""
    tok = Tokenizer.build(["the ending was bad"])
    text = "the \u200b\u202e ending \u2066was\u2069 \u202abad\u202c"
    assert clean_text(text) == "the ending was bad"
    assert tok.tokenize(text) == ["the", "ending", "was", "bad"]


def test_relation_tags_are_the_relation_markers():
    from textcls.data.relation import MARKERS
    from textcls.data.text import RELATION_TAGS
    assert RELATION_TAGS == set(MARKERS)


def test_readable_shows_data_set_text_as_a_person_writes_it():
    """Issue 27.8: IMDB's <br /> and the SST files' Penn Treebank escapes are not shown raw; the tokenizer reads
    the readable text into the same words (brackets and quotes as typed)."""
    from textcls.data.text import readable
    raw = "great film .<br /><br />but -lrb- writer\\/director -RRB- said `` never again '' ."
    out = readable(raw)
    assert out == 'great film .\n\nbut ( writer/director ) said " never again " .'
    for junk in ("<br", "-lrb-", "-rrb-", "``", "''", "\\/"):
        assert junk.lower() not in out.lower()
    assert Tokenizer().tokenize(out) == ["great", "film", ".", "but", "(", "writer", "/", "director", ")", "said",
                                         '"', "never", "again", '"', "."]
