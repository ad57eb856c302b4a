int store_get();  // core/cache/remote/ uses core/cache/: allowed
int remote_get() { return 1; }
int remote_fill() { return store_get(); }
