# bench: see its sources
