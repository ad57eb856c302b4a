#pragma once
#include <cinttypes>
