"""Whether a measurement can be believed: the honesty flags of a level (`honesty`) and the
statistics its verdicts rest on (`stats`: means, intervals, ties)."""
