"""Studies of one trained model that tune dynamic evaluation: the `study` rules and the `trial` that evaluates the model under one setting."""
