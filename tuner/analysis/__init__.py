"""Reading studies for people: the read model and its cache (`reads`), importances, the Appendix 2.B
sensitivity neighbourhood, plots, tabular export. Used by the API and the CLI; no web framework here."""
