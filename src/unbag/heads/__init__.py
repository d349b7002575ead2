"""Learned alignment heads on frozen features: TFLocal (patches) and TFGlobal (the control)."""
