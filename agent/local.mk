# agent: see its sources
