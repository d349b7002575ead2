"""Hard-negative captions: word swaps (NegCLIP, CLIC) and typed negatives (DeGLA)."""
