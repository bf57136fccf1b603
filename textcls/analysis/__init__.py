"""Analysis of predictions over many texts: metrics, calibration, slices, representations, counterfactuals, data-set views."""
