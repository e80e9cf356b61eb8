// Every tensor op, in one include.
#pragma once

#include "tinytorch/ops/activation.h"
#include "tinytorch/ops/attention.h"
#include "tinytorch/ops/copy.h"
#include "tinytorch/ops/dropout.h"
#include "tinytorch/ops/elementwise.h"
#include "tinytorch/ops/embedding.h"
#include "tinytorch/ops/factory.h"
#include "tinytorch/ops/indexing.h"
#include "tinytorch/ops/join.h"
#include "tinytorch/ops/linalg.h"
#include "tinytorch/ops/loss.h"
#include "tinytorch/ops/normalization.h"
#include "tinytorch/ops/reduction.h"
#include "tinytorch/ops/view.h"
