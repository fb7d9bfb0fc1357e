# devices, topology, placement, domain XML
