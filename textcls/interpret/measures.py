"""The three measures scored beside faithfulness for every explanation (docs/faithfulness.md):
plausibility (textcls.interpret.plausibility), the cascading randomisation sanity check
(textcls.interpret.sanity) and cost (seconds per text). `slice_measures` adds them to a SliceRun's report rows;
`explain_any` gives one score vector per instance for any method a SliceRun knows."""
from __future__ import annotations

from typing import Any, Sequence



def explain_any(model, instances: Sequence, method: str, **kw) -> list:
    """One importance per instance by any registered method (textcls.interpret.methods), in length buckets
    (`batched.importances`); keyword arguments go to the method."""
    from textcls.interpret.batched import importances
    return importances(model, list(instances), method, **kw)


def slice_measures(run, gold: Sequence[int] | None, label_names: Sequence[str] | None, sanity_texts: int = 0,
                   seed: int = 0) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """{method: {plausibility_auprc, plausibility_token_f1, plausibility_n, seconds_per_text, sanity_rho,
    sanity_flag}} for a finished (or stopped) SliceRun, and notes. `gold`: the texts' gold label indices (None:
    no plausibility); `sanity_texts`: how many of the run's first texts the randomisation check uses (0: none)."""
    from textcls.interpret.plausibility import evidence_labels, mean_plausibility
    out: dict[str, dict[str, Any]] = {m: {} for m in run.methods}
    notes: list[str] = []
    why = evidence_labels(label_names) if gold is not None else "no gold labels"
    if why is not None:
        notes.append(f"plausibility not computed: {why}")
    for m in run.methods:
        done = run.importances[m]
        n = max(len(done), 1)
        out[m]["seconds_per_text"] = run.timings.get(m, 0.0) / n
        if why is None:
            items = [(run.insts[i].tokens, done[i], label_names[int(gold[i])]) for i in sorted(done)
                     if run.insts[i].tokens is not None]
            out[m].update(mean_plausibility(items))
    if sanity_texts > 0:
        from textcls.interpret.sanity import cascading_randomisation
        insts = [i for i in run.insts[:sanity_texts] if i.n > 1]
        methods = [m for m in run.methods if m != "random"]
        kw = {"baseline": run.baseline, "n_steps": run.n_steps, "seed": seed, "removal": run.removal}
        try:
            res = cascading_randomisation(run.model, insts, methods,
                                          lambda model, xs, m: explain_any(model, xs, m, **kw), seed=seed)
        except Exception as e:  # noqa: BLE001 - an optional check never costs what was computed: one line
            notes.append(f"randomisation check not run: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            return out, notes
        for m in methods:
            out[m]["sanity_rho"] = res["final"][m]
            out[m]["sanity_rho_stages"] = res["rho"][m]
            out[m]["sanity_flag"] = m in res["flagged"]
        notes.append(f"sanity: {len(insts)} texts, layers randomised top-down: {', '.join(res['stages'])}")
    return out, notes


__all__ = ["explain_any", "slice_measures"]
