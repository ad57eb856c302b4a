#pragma once
#include <ctime>
