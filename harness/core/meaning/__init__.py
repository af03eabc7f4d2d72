"""What a switch's configs mean, whatever their wording: FRR's frr.conf (harness.core.meaning.frr,
.bgp) and SONiC's config_db.json (.configdb), compared by behaviour (.compare). Pure: text in,
typed models and differences out; no I/O."""
