
>
inputPlaceholder*
dtype0*
shape:
=
filterConst*
dtype0*
valueB
N
convConv2Dinputfilter*
T0*
strides
*
paddingSAME
$
reluReluconv^filter*
T0