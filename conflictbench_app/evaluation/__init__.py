"""Evaluation: the alignment judge, human labels and agreement, the regret test, the single-turn comparison and the
paper's tables. Import the submodules you need; this package imports nothing heavy on its own."""
