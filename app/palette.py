"""One colour per meaning, shared by every table, chart and graph of the explorer (colour-blind
safe pairs; each also readable on a dark background)."""

KNOWN = "#2a9d8f"      # an answer that is a known fact
OTHER = "#577590"      # any other answer / neutral series
CHOSEN = "#b45309"     # the answer being explained
QUERY = "#0f766e"      # the question's entity
AS_OBJECT = "#d97706"  # the timeline's entity as the object of a fact (beside QUERY's diamonds: colour and shape differ)
PAST, SAME, FUTURE = "#1d4ed8", "#6b7280", "#ea580c"  # a link's time relative to the question
T_Q = "#b91c1c"        # the question's time marker
LOSS, METRIC = "#577590", "#e76f51"  # training curves
REFERENCE = "#6b7280"  # a reference level drawn on a chart (a uniform guess)
