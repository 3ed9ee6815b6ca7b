// Shim for liblo (OSC): the low-level API only (messages, bundles, addresses, URLs).
#ifndef JACKVU_CLIBLO_SHIM_H
#define JACKVU_CLIBLO_SHIM_H

#include <lo/lo_lowlevel.h>

#endif
