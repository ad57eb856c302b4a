int remote_get();  // a forward declaration of a function of core/cache/remote/, the room above
int store_get() { return remote_get() + 1; }
