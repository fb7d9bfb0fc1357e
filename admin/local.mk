# admin: see its sources
