L:
	vmovupd	(%rcx,%r11), %ymm5
	vmovupd	0x20(%rcx,%r11), %ymm6
	vmulpd	0x20(%rdx,%r11), %ymm6, %ymm6
	vmulpd	(%rdx,%r11), %ymm5, %ymm5
	vmulpd	(%r8,%r11), %ymm5, %ymm5
	vmulpd	0x20(%r8,%r11), %ymm6, %ymm6
	vaddpd	%ymm6, %ymm3, %ymm3
	vaddpd	%ymm5, %ymm0, %ymm0
	vandpd	%ymm4, %ymm6, %ymm6
	vandpd	%ymm4, %ymm5, %ymm5
	vmovupd	(%rax,%r11), %ymm7
	vcmpltpd	%ymm5, %ymm7, %ymm5
	vpsubq	%ymm5, %ymm1, %ymm1
	vmovupd	0x20(%rax,%r11), %ymm5
	vcmpltpd	%ymm6, %ymm5, %ymm5
	vpsubq	%ymm5, %ymm2, %ymm2
	addq	$0x40, %r11
	cmpq	%r11, %r10
	jne	L
