"""What a study optimises and bounds: the measures every trial records (`measures`), the
objectives and constraints of a study parsed from the sweep spec (`goals`), and dominance,
non-dominated sorting and hypervolume over plain values (`pareto`)."""
