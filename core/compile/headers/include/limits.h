#pragma once
#include <climits>
