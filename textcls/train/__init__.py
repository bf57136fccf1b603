"""Training: the loop (fit), training from a spec (pipeline), background jobs, the hyper-parameter form, and what a run records."""
