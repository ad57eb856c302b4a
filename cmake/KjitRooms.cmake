# kjit_room(NAME FOLDER LIBRARY core|tools [USES room...]): one room of a library, the sources
# FOLDER/*.cpp (relative to the calling CMakeLists.txt) as the object library kjit_room_NAME, with
# hidden visibility, linked to exactly the rooms it uses (layers.json; the ctest
# build/layers compares the two). The rooms of each library are kept, in order, in the global
# property KJIT_<LIBRARY>_ROOMS.
function(kjit_room name folder)
  cmake_parse_arguments(R "" "LIBRARY" "USES" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${folder}*.cpp)
  add_library(kjit_room_${name} OBJECT ${sources})
  set_target_properties(kjit_room_${name} PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(kjit_room_${name} PUBLIC kjit_room_settings)
  foreach(used IN LISTS R_USES)
    target_link_libraries(kjit_room_${name} PUBLIC kjit_room_${used})
  endforeach()
  kjit_warnings(kjit_room_${name})
  # The room's folder from the top of the tree ("core/compile", "core" for the facade): with unity
  # builds an object is no longer named after its source, and the room scan reads the folder here.
  file(RELATIVE_PATH room_folder ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/${folder})
  set_target_properties(kjit_room_${name} PROPERTIES KJIT_ROOM_FOLDER "${room_folder}")
  string(TOUPPER "${R_LIBRARY}" library)
  set_property(GLOBAL APPEND PROPERTY KJIT_${library}_ROOMS ${name})
endfunction()

# kjit_room_objects(LIBRARY OUT): the objects of every room of LIBRARY (core or tools).
function(kjit_room_objects library out)
  string(TOUPPER "${library}" library)
  get_property(rooms GLOBAL PROPERTY KJIT_${library}_ROOMS)
  set(objects "")
  foreach(room IN LISTS rooms)
    list(APPEND objects $<TARGET_OBJECTS:kjit_room_${room}>)
  endforeach()
  set(${out} ${objects} PARENT_SCOPE)
endfunction()
