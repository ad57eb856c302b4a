// A fixture: a core internal.
#pragma once

int low();
