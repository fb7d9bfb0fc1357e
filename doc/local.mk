# doc: see its sources
