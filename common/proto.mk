# wire format: see proto.h
