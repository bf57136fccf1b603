"""Relation classification (issue 16): entity spans from markers, relative positions, the models' relative-position
input (padding invariance with it), the "- position embed." ablation switch, the task's settings and metrics."""
import pytest
import torch

import textcls
from textcls.experiments.cells import select_cells
from textcls.analysis.metrics import relation_table
from textcls.models.relation import marker_overrides, relative_position_ids
from textcls.data.relation import (MARKERS, OBJ, SUBJ, EntitySpanError, apply_entity_mode, has_markers,
    is_relation_task, parse_spans, relative_positions, word_spans)
from textcls.data.text import Tokenizer, TokenizerConfig

GOOD = "The <e1>burst</e1> has been caused by water hammer <e2>pressure</e2> ."
REVERSED_ORDER = "a <e2>red wine</e2> was poured into the <e1>glass</e1> ."
SENTENCES = [GOOD, REVERSED_ORDER, "the <e1>cat</e1> sat on the <e2>mat</e2>", "<e1>x y z</e1> <e2>w</e2>"]


def tok(text):
    return Tokenizer(TokenizerConfig(entities="keep")).tokenize(text)   # the tags as tokens, spans unchecked


# ------------------------------------------------------------------ spans

def test_spans_of_well_formed_sentences_either_order():
    t = tok(GOOD)
    sp = parse_spans(t)
    assert t[sp.e1[0]:sp.e1[1] + 1] == ["burst"] and t[sp.e2[0]:sp.e2[1] + 1] == ["pressure"]
    t = tok(REVERSED_ORDER)
    sp = parse_spans(t)
    assert t[sp.e2[0]:sp.e2[1] + 1] == ["red", "wine"] and t[sp.e1[0]:sp.e1[1] + 1] == ["glass"]
    words = [x for x in t if x not in MARKERS]
    ws = word_spans(t)
    assert words[ws.e2[0]:ws.e2[1] + 1] == ["red", "wine"] and words[ws.e1[0]:ws.e1[1] + 1] == ["glass"]
    assert has_markers(GOOD) and not has_markers("no tags here")


@pytest.mark.parametrize("text, message", [
    ("no markers at all", "missing entity marker"),
    ("the <e1>cat</e1> sat on the mat", r"missing entity marker\(s\) <e2> </e2>"),
    ("<e1>a</e1> <e1>b</e1> <e2>c</e2>", "more than once"),
    ("</e1>a<e1> <e2>c</e2>", "reversed"),
    ("<e1></e1> <e2>c</e2>", "empty"),
    ("<e1>a <e2>b</e2> c</e1>", "overlap or are nested"),
    ("<e1>a <e2>b</e1> c</e2>", "overlap or are nested"),
    ("<e1>a</e1><e2>b</e2>", None),                           # adjacent spans are fine
])
def test_malformed_markers_get_a_clear_error(text, message):
    if message is None:
        assert parse_spans(tok(text)).e1 == (1, 1)
        return
    with pytest.raises(EntitySpanError, match=message):
        parse_spans(tok(text))


def test_tokenizer_names_the_bad_row():
    t = Tokenizer(TokenizerConfig(entities="keep"))
    with pytest.raises(EntitySpanError, match=r"^text 2: missing entity marker"):
        t.encode([GOOD, REVERSED_ORDER, "plain sentence"])
    with pytest.raises(ValueError, match="entities must be one of"):
        TokenizerConfig(entities="bogus")
    with pytest.raises(ValueError, match="flat word-level"):
        TokenizerConfig(entities="keep", level="char")


def test_entity_modes_keep_drop_mask():
    t = tok(GOOD)
    assert apply_entity_mode(t, "keep") == t
    assert apply_entity_mode(t, "drop") == [x for x in t if x not in MARKERS]
    masked = apply_entity_mode(tok(REVERSED_ORDER), "mask")
    assert masked == ["a", "<e2>", OBJ, "</e2>", "was", "poured", "into", "the", "<e1>", SUBJ, "</e1>", "."]
    enc = Tokenizer(TokenizerConfig(entities="drop")).encode([GOOD])
    assert "<e1>" not in enc.tokens[0] and enc.tokens[0][:2] == ["the", "burst"]


# ------------------------------------------------------------------ relative positions

def test_relative_positions_and_clipping():
    assert relative_positions(7, (2, 3), 10) == [-2, -1, 0, 0, 1, 2, 3]
    assert relative_positions(7, (2, 3), 2) == [-2, -1, 0, 0, 1, 2, 2]
    with pytest.raises(ValueError):
        relative_positions(3, (0, 0), 0)


@pytest.mark.parametrize("as_words", [True, False])
def test_model_positions_match_the_token_level_definition(as_words):
    tk = Tokenizer.build(SENTENCES, TokenizerConfig(entities="keep"))
    ids = marker_overrides(tk.vocab)
    marker_ids = (ids["e1_start_id"], ids["e1_end_id"], ids["e2_start_id"], ids["e2_end_id"])
    enc = tk.encode(SENTENCES)
    window = 3
    rel, found, read = relative_position_ids(enc.token_ids, enc.mask, marker_ids, window, as_words)
    assert found.all()
    for b, tokens in enumerate(enc.tokens):
        seen = tokens if as_words else [x for x in tokens if x not in MARKERS]
        sp = parse_spans(tokens) if as_words else word_spans(tokens)
        keep = read[b].nonzero().flatten()
        assert len(keep) == len(seen)
        assert rel[b, keep, 0].tolist() == relative_positions(len(seen), sp.e1, window)
        assert rel[b, keep, 1].tolist() == relative_positions(len(seen), sp.e2, window)


# ------------------------------------------------------------------ models

def relation_model(name, variant=None, **kw):
    tk = Tokenizer.build(SENTENCES + ["<e1>extra</e1> words for <e2>the</e2> vocabulary"], TokenizerConfig(entities="keep"))
    torch.manual_seed(0)
    over = dict(preset="small", relative_positions=True, rel_window=4, **marker_overrides(tk.vocab), **kw)
    if name == "transformer":
        over["pooling"] = "global"
    model = textcls.create_model(name, vocab_size=len(tk.vocab), num_labels=3, variant=variant, **over)
    return model.eval(), tk


@pytest.mark.parametrize("name", ["act", "transformer"])
@pytest.mark.parametrize("as_words", [True, False])
def test_padding_invariance_with_entity_positions(name, as_words):
    model, tk = relation_model(name, markers_as_words=as_words)
    enc = tk.encode(SENTENCES)
    ref = model(enc.token_ids, enc.mask, return_maps=True)
    assert {s.name for s in model.map_specs()} >= {"relative_position", "alpha"}
    big = torch.nn.functional.pad(enc.token_ids, (0, 6))
    big_mask = torch.nn.functional.pad(enc.mask, (0, 6))
    garbage = torch.randint(2, len(tk.vocab), big.shape, generator=torch.Generator().manual_seed(3))
    big = torch.where(big_mask, big, garbage)
    out = model(big, big_mask, return_maps=True)
    torch.testing.assert_close(out.logits, ref.logits, atol=1e-5, rtol=1e-4)
    L = enc.token_ids.shape[1]
    torch.testing.assert_close(out.maps["relative_position"][:, :L], ref.maps["relative_position"])
    torch.testing.assert_close(out.maps["alpha"][:, :L], ref.maps["alpha"], atol=1e-5, rtol=1e-4)
    # one at a time = in a batch
    for b in range(len(SENTENCES)):
        one = tk.encode([SENTENCES[b]])
        torch.testing.assert_close(model(one.token_ids, one.mask).logits[0], ref.logits[b], atol=1e-5, rtol=1e-4)
    if not as_words:      # the tags are not read: zero attention on them
        tags = torch.zeros_like(enc.mask)
        for m in MARKERS:
            tags |= enc.token_ids == tk.vocab.stoi[m]
        assert (ref.maps["alpha"][tags] == 0).all()


@pytest.mark.parametrize("name", ["act", "transformer"])
def test_the_entity_positions_reach_the_output(name):
    """Moving the entities (same words, same order of the rest) changes the logits only through the positions."""
    model, tk = relation_model(name, markers_as_words=False)
    a = tk.encode(["<e1>the</e1> cat sat on <e2>the</e2> mat"])
    b = tk.encode(["the cat <e1>sat</e1> on the <e2>mat</e2>"])
    assert not torch.allclose(model(a.token_ids, a.mask).logits, model(b.token_ids, b.mask).logits)


def test_removing_position_embeddings_is_act_table3_row4():
    """ACT Table 3 row 4, "- position embed.": the registered variant no_position. On relations it removes the
    relative positions with the absolute ones: no tables, no W_p, and (tags not read) the model can no longer
    tell which entity is which: swapping e1 and e2 changes nothing it sees (the direction of the relation)."""
    full, tk = relation_model("act", markers_as_words=False)
    ablated, _ = relation_model("act", variant="no_position", markers_as_words=False)
    assert ablated.config.position_embed is False and full.config.position_embed is True
    c = full.config
    rows = 2 * c.rel_window + 2
    assert full.num_parameters() - ablated.num_parameters() == 2 * rows * (c.d_pos // 2) + c.d_pos * c.d_attn
    assert "relative_position" not in {s.name for s in ablated.map_specs()}
    a = tk.encode(["the <e1>cat</e1> sat on the <e2>mat</e2>"])
    b = tk.encode(["the <e2>cat</e2> sat on the <e1>mat</e1>"])
    torch.testing.assert_close(ablated(a.token_ids, a.mask).logits, ablated(b.token_ids, b.mask).logits)
    assert not torch.allclose(full(a.token_ids, a.mask).logits, full(b.token_ids, b.mask).logits)
    # the same row in the Table 3 suite and in the SemEval suite
    row4 = [c for c in select_cells(["act_ablation"]) if c.setting == "- position embed."]
    sem = [c for c in select_cells(["act_semeval"]) if "- position embed." in c.setting]
    assert [c.variant for c in row4] == ["no_position"] and [c.variant for c in sem] == ["no_position"] * 2
    assert all(c.metric == "macro_f1" and c.runs == 3 and c.paper is None for c in select_cells(["act_semeval"]))


def test_relation_preset_is_the_papers_settings():
    c = textcls.make_config("act", preset="relation")
    assert (c.n_layers, c.n_heads, c.n_filters, c.kernel_size, c.relative_positions) == (1, 6, 40, 3, True)
    model = textcls.create_model("act", vocab_size=50, num_labels=19, preset="relation")
    assert model.relative.to_e1.embedding_dim == model.relative.to_e2.embedding_dim == 30
    assert not hasattr(model.global_attention, "positions")      # no absolute table
    t = textcls.create_model("transformer", vocab_size=50, num_labels=19, preset="relation")
    assert t.config.pooling == "global" and t.config.n_layers == 1 and t.relative.to_e1.embedding_dim == 30
    with pytest.raises(ValueError, match="pooling='global'"):
        textcls.create_model("transformer", vocab_size=50, num_labels=3, preset="small", relative_positions=True)
    with pytest.raises(ValueError, match="missing"):
        marker_overrides(Tokenizer.build(["no tags"]).vocab)


# ------------------------------------------------------------------ task settings and metrics

def test_training_on_relation_data_picks_the_task_settings(tmp_path):
    from textcls.data.datasets import load_data
    from textcls.train.pipeline import train_from_spec
    bundle = load_data("semeval2010", limit=40)
    assert is_relation_task(bundle.task, bundle.labels) and not is_relation_task("sentiment", ["pos", "neg"])
    small = dict(embed_dim=12, d_model=12, d_attn=8, d_pos=4, fc_dim=8)
    res = train_from_spec(bundle, "act", overrides=small, embeddings="random", epochs=1, out=tmp_path / "act")
    vocab = res.tokenizer.vocab
    assert res.tokenizer.config.entities == "keep" and res.model.config.n_layers == 1
    assert res.model.config.e2_end_id == vocab.stoi["</e2>"] and res.model.relative is not None
    p = textcls.load_checkpoint(tmp_path / "act")
    pred = p.predict([GOOD], return_maps=True)[0]
    assert pred.maps["relative_position"].shape == (len(pred.tokens), 2)
    with pytest.raises(EntitySpanError, match="missing entity marker"):
        p.predict(["a sentence without markers"])
    plain = train_from_spec(bundle, "kim_cnn", preset="small", embeddings="random", epochs=1, out=None)
    assert plain.tokenizer.config.entities == "drop" and "<e1>" not in plain.tokenizer.vocab


def test_cli_evaluate_json_reports_macro_f1_and_the_relation_table(tmp_path, capsys):
    import json

    from textcls.cli import main
    from textcls.data.datasets import load_data
    from textcls.train.pipeline import train_from_spec
    small = dict(embed_dim=12, d_model=12, d_attn=8, d_pos=4, fc_dim=8)
    train_from_spec(load_data("semeval2010", limit=40), "act", overrides=small, embeddings="random", epochs=1,
                    out=tmp_path / "act")
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "act"), "--json", "--limit", "50"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["ignore_label"] == "Other" and 0 <= rep["macro_f1"] <= 1
    assert len(rep["per_relation"]) == 9 and "Cause-Effect" in rep["per_relation"]     # directions together
    assert main(["evaluate", str(tmp_path / "act"), "--limit", "50"]) == 0
    assert "per relation" in capsys.readouterr().out
    assert main(["predict", str(tmp_path / "act"), "no markers in this one"]) == 2
    err = capsys.readouterr().err
    assert "missing entity marker" in err and "Traceback" not in err


def test_official_style_relation_table():
    labels = ["A(e1,e2)", "A(e2,e1)", "Other"]
    # gold rows, predicted columns: 2 right A(e1,e2), 1 A(e1,e2) predicted in the wrong direction, 1 Other -> A
    cm = [[2, 1, 0], [0, 0, 0], [0, 1, 3]]
    t = relation_table(cm, labels, "Other")
    a = t["per_relation"]["A"]
    assert a["support"] == 3 and a["precision"] == pytest.approx(2 / 4) and a["recall"] == pytest.approx(2 / 3)
    assert t["macro_f1_official"] == pytest.approx(a["f1"])
    assert relation_table([[1]], ["pos"]) is None
