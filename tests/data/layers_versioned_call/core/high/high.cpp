extern "C" int high() { return 1; }
