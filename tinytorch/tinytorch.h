// The umbrella header: #include <tinytorch/tinytorch.h> gives the whole public API.
#pragma once

#include "tinytorch/core/allocator.h"
#include "tinytorch/core/device.h"
#include "tinytorch/core/dtype.h"
#include "tinytorch/core/error.h"
#include "tinytorch/core/generator.h"
#include "tinytorch/core/scalar.h"
#include "tinytorch/core/shape.h"
#include "tinytorch/core/tensor.h"
#include "tinytorch/core/tensor_options.h"
#include "tinytorch/ops/ops.h"
