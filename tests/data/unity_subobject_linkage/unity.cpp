// What CMake's unity build makes of a room: its .cpp files included into one (#52 item 20: the
// standalone Python build printed -Wsubobject-linkage for each such class).
#include "part.cpp"
