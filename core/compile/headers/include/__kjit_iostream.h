// The streams of <iostream>, <ostream>, <istream>, <fstream>, <sstream> and <iomanip>, host-only
// under NVRTC: std::cout << x in device code fails naming <iostream> (use printf); the stream
// classes can be named in prototypes.
// What the host's <iostream> brings with it under nvcc (libstdc++'s includes <type_traits>,
// std::move, std::swap and std::pair, std::min and std::max), for device code that uses them
// having included <iostream> alone.
#pragma once
#include <string>
#include <type_traits>
#include <utility>
#include <algorithm>
namespace std {
enum __kjit_host_stream { cout, cerr, clog, cin, wcout, wcerr };
template <class _Tp> __KJIT_HD __kjit_host_stream operator<<(__kjit_host_stream __s, const _Tp&) {
  static_assert(__kjit::__host_only<_Tp>, "std::cout, std::cerr and std::clog (<iostream>) are host-only under NVRTC: "
                                          "kjit compiles device code only; in a kernel, use printf");
  return __s;
}
template <class _Tp> __KJIT_HD __kjit_host_stream operator>>(__kjit_host_stream __s, _Tp&) {
  static_assert(__kjit::__host_only<_Tp>, "std::cin (<iostream>) is host-only under NVRTC: kjit compiles device code only");
  return __s;
}
__KJIT_HOST_ONLY_TEMPLATE(basic_ostream, "<ostream>") __KJIT_HOST_ONLY_TEMPLATE(basic_istream, "<istream>")
__KJIT_HOST_ONLY_TEMPLATE(basic_iostream, "<iostream>") __KJIT_HOST_ONLY_TEMPLATE(basic_ifstream, "<fstream>")
__KJIT_HOST_ONLY_TEMPLATE(basic_ofstream, "<fstream>") __KJIT_HOST_ONLY_TEMPLATE(basic_fstream, "<fstream>")
__KJIT_HOST_ONLY_TEMPLATE(basic_stringstream, "<sstream>") __KJIT_HOST_ONLY_TEMPLATE(basic_istringstream, "<sstream>")
__KJIT_HOST_ONLY_TEMPLATE(basic_ostringstream, "<sstream>")
typedef basic_ostream<char> ostream; typedef basic_istream<char> istream; typedef basic_iostream<char> iostream;
typedef basic_ifstream<char> ifstream; typedef basic_ofstream<char> ofstream; typedef basic_fstream<char> fstream;
typedef basic_stringstream<char> stringstream; typedef basic_istringstream<char> istringstream;
typedef basic_ostringstream<char> ostringstream;
__KJIT_HOST_ONLY_FUNCTION(endl, "<ostream>") __KJIT_HOST_ONLY_FUNCTION(flush, "<ostream>")
__KJIT_HOST_ONLY_FUNCTION(setw, "<iomanip>") __KJIT_HOST_ONLY_FUNCTION(setprecision, "<iomanip>")
__KJIT_HOST_ONLY_FUNCTION(setfill, "<iomanip>") __KJIT_HOST_ONLY_FUNCTION(getline, "<string>")
}  // namespace std
