// <unistd.h>, host-only under NVRTC: nothing in it runs on a device; a kernel file that includes
// it for its host code compiles.
#pragma once
