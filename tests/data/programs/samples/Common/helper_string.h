// Written for kjit's tests in the shape of a samples project's string helpers: host-only system
// headers and host functions, all used by host code alone.
#ifndef COMMON_HELPER_STRING_H_
#define COMMON_HELPER_STRING_H_

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <string>

#ifndef STRCASECMP
#define STRCASECMP strcasecmp
#endif

inline int stringRemoveDelimiter(char delimiter, const char *string) {
  int string_start = 0;
  while (string[string_start] == delimiter) {
    string_start++;
  }
  if (string_start >= static_cast<int>(strlen(string) - 1)) {
    return 0;
  }
  return string_start;
}

inline bool checkCmdLineFlag(const int argc, const char **argv, const char *string_ref) {
  for (int i = 1; i < argc; i++) {
    int string_start = stringRemoveDelimiter('-', argv[i]);
    const char *string_argv = &argv[i][string_start];
    if (STRCASECMP(string_argv, string_ref) == 0) return true;
  }
  return false;
}

inline long peakMemoryKb() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

static std::string sdkFindFilePath(const char *filename) { return std::string("./data/") + filename; }

#endif  // COMMON_HELPER_STRING_H_
