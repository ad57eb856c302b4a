// Fixture header reached through the manifest's include_dirs.
#pragma once
namespace fixture {
__device__ inline float activate(float v) {
#ifdef LEAKY
  return v > 0.0f ? v : 0.01f * v;
#else
  return v > 0.0f ? v : SLOPE;
#endif
}
}  // namespace fixture
