#pragma once
#include <cstdlib>
