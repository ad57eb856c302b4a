// libkjit_tools' door into core/cache/ and core/cache/remote/ (see core/spi/system.hpp): a cache
// folder's parts (kjit cache stats, ls, verify, prune, clear), its entries and keys, bundles, the
// default folder and CACHEDIR.TAG, the remote's spelling, backends, OCI registries, rendezvous
// hashing (warm --shard) and signing keys.
#pragma once

#include "core/cache/bundle.hpp"
#include "core/cache/config.hpp"
#include "core/cache/entry.hpp"
#include "core/cache/key.hpp"
#include "core/cache/remote/oci_registry.hpp"
#include "core/cache/remote/remote_backend.hpp"
#include "core/cache/remote/remote_list.hpp"
#include "core/cache/remote/remote_store.hpp"
#include "core/cache/remote/rendezvous.hpp"
#include "core/cache/remote/signer.hpp"
#include "core/cache/store.hpp"
#include "core/cache/store_folder.hpp"
#include "core/cache/store_maintenance.hpp"
#include "core/cache/store_stats.hpp"
