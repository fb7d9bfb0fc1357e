# placement unit tests
