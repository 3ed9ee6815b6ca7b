// LV2's core header (lv2-dev): the plugin descriptor and its entry point.
#include <lv2/core/lv2.h>
