# proto unit tests
