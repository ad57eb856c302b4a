// A .cpp as kjit's rooms have them: a handle type local to the file, held by a class of the
// library's namespace (core/driver/module.cpp's ModuleState, core/loader/loader.cpp's Impl).
namespace {
void release(int) noexcept {}
template <void (*F)(int)> struct Handle { int value = 0; };
using LocalHandle = Handle<&release>;
}  // namespace

namespace lib {
struct State {
  LocalHandle handle;
};
int use() { return State{}.handle.value; }
}  // namespace lib
